import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { EventStore } from '../../src/store/event-store.js';
import { sampleEvent } from '../support/log-files.js';
import { osSnapshotProjector, waitForHorizon } from '../support/projector-harness.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();

describe('the lease', () => {
  it('lets a batch that outlasts the lease commit: nobody can take the lease while the batch holds it', async () => {
    await new EventStore(testDb.db).append('slow-batch', [sampleEvent(1), sampleEvent(2)]);
    await waitForHorizon(testDb.db);
    const projector = osSnapshotProjector(testDb.db, { leaseTtlMs: 500 });
    const rival = osSnapshotProjector(testDb.db, { leaseTtlMs: 500, owner: 'rival' });
    expect(await projector.lead()).toBe(true);

    const blocker = new pg.Client({ connectionString: testDb.url });
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE os_signals IN SHARE MODE');
    const batch = projector.step();
    await new Promise((resolve) => setTimeout(resolve, 1200));
    // The lease has expired by the clock, but its row is locked by the batch: no takeover.
    const takeover = rival.lead();
    await blocker.query('COMMIT');
    await blocker.end();

    expect(await batch).toMatchObject({ windowCount: 2, eventsApplied: 2 });
    // Once the batch committed, the expired lease is free to take.
    expect(await takeover).toBe(true);
    await rival.releaseLease();
    const checkpoint = await testDb.db.selectFrom('projection_checkpoints').select('events_applied').executeTakeFirstOrThrow();
    expect(checkpoint.events_applied).toBe(2);
  });
});
