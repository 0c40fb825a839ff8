import type { Kysely } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { osSnapshotProjection } from '../../projections/os-snapshot/os-snapshot-projection.js';
import { verifyOsSnapshots } from '../../src/deprecated-os-snapshot.js';
import type { DB } from '../../src/db/schema.js';
import { Lease, LeaseLostError } from '../../src/projector/lease.js';
import type { BatchOptions } from '../../src/projector/batch-result.js';
import { runBatch } from '../../src/projector/run-batch.js';
import { EventStore } from '../../src/store/event-store.js';
import { sampleEvent } from '../support/log-files.js';
import { osSnapshotProjector, waitForHorizon } from '../support/projector-harness.js';
import { onCitus, useTestDatabase } from '../support/test-database.js';

const options: BatchOptions = { batchSize: 5000, skipInvalid: false, leaseTtlMs: 5000 };

const testDb = useTestDatabase({ perTest: true });
afterEach(() => {
  vi.restoreAllMocks();
});

/** `count` events appended to `sessionId` after its `from`-th, committed below the horizon. */
async function append(sessionId: string, from: number, count: number): Promise<void> {
  await new EventStore(testDb.db).append(sessionId, Array.from({ length: count }, (_, i) => sampleEvent(from + i)));
  await waitForHorizon(testDb.db);
}

/** What a batch may change: the checkpoint, and the snapshot tables. */
async function projectedState(db: Kysely<DB>) {
  const checkpoint = await db.selectFrom('projection_checkpoints').selectAll().where('projection', '=', osSnapshotProjection.name).executeTakeFirstOrThrow();
  const sessions = await db.selectFrom('os_snapshots').select(['session_id', 'last_seq']).orderBy('session_id').execute();
  return { checkpoint, sessions };
}

describe('a batch (one statement)', () => {
  it('folds the window after the checkpoint and moves it to the window end; the next goes on from there', async () => {
    await append('a', 0, 5);
    await append('b', 0, 4);
    const lease = new Lease(testDb.db, osSnapshotProjection.name, 'batch-test', 5000);
    const held = (await lease.tryAcquire())!;
    const first = await runBatch(testDb.db, osSnapshotProjection, held, { ...options, batchSize: 6 });
    expect(first).toMatchObject({ windowCount: 6, eventsApplied: 6, skipped: 0, stoppedCount: 0 });
    // On Citus the checkpoint is each session's head: the older session whole, then the next one's first event.
    if (onCitus) expect((await projectedState(testDb.db)).sessions).toEqual([{ session_id: 'a', last_seq: 4 }, { session_id: 'b', last_seq: 0 }]);
    const second = await runBatch(testDb.db, osSnapshotProjection, held, { ...options, batchSize: 6 });
    expect(second).toMatchObject({ windowCount: 3, eventsApplied: 3 });
    if (!onCitus) expect(second.checkpoint!.position).toBeGreaterThan(first.checkpoint!.position);
    expect(await runBatch(testDb.db, osSnapshotProjection, held, options)).toMatchObject({ windowCount: 0, checkpoint: undefined });
    expect((await projectedState(testDb.db)).checkpoint.events_applied).toBe(9);
    expect(await verifyOsSnapshots(testDb.db, { all: true })).toMatchObject({ mismatches: [], pending: [], checked: 2 });
  });

  it('renews the lease even when there is nothing to fold', async () => {
    const lease = new Lease(testDb.db, osSnapshotProjection.name, 'batch-test', 500);
    const held = (await lease.tryAcquire())!;
    const expiry = async () => (await testDb.db.selectFrom('projection_leases').select('expires_at').executeTakeFirstOrThrow()).expires_at.getTime();
    const before = await expiry();
    await runBatch(testDb.db, osSnapshotProjection, held, { ...options, leaseTtlMs: 60_000 });
    expect(await expiry()).toBeGreaterThan(before + 50_000);
  });

  it('keeps nothing once another owner took the lease', async () => {
    await append('a', 0, 3);
    const lease = new Lease(testDb.db, osSnapshotProjection.name, 'batch-test', 5000);
    const held = (await lease.tryAcquire())!;
    await new Lease(testDb.db, osSnapshotProjection.name, 'rival', 5000).seize();
    const before = await projectedState(testDb.db);
    await expect(runBatch(testDb.db, osSnapshotProjection, held, options)).rejects.toBeInstanceOf(LeaseLostError);
    expect(await projectedState(testDb.db)).toEqual(before);
  });

  it('is prepared once per connection by the projector, and sent in one query after that', async () => {
    await append('live', 0, 3);
    const projector = osSnapshotProjector(testDb.db);
    expect(await projector.lead()).toBe(true);
    const query = vi.spyOn(pg.Client.prototype, 'query');
    expect(await projector.step()).toMatchObject({ windowCount: 3 });
    // On Citus a batch is a transaction of a fixed list of statements (run-session-batch.ts): as many in every round.
    let perBatch = onCitus ? undefined : 1;
    for (let round = 1; round <= 3; round++) {
      await append('live', 3 * round, 3);
      query.mockClear();
      expect(await projector.step()).toMatchObject({ windowCount: 3 });
      perBatch ??= query.mock.calls.length;
      expect(query).toHaveBeenCalledTimes(perBatch);
    }
    await projector.releaseLease();
    expect(await verifyOsSnapshots(testDb.db, { all: true })).toMatchObject({ mismatches: [], pending: [], checked: 1 });
  });
});
