import pg from 'pg';
import { describe, expect, it, onTestFinished } from 'vitest';
import { verifyOsSnapshots } from '../../src/deprecated-os-snapshot.js';
import { LeaseLostError } from '../../src/projector/lease.js';
import { EventStore } from '../../src/store/event-store.js';
import { sampleEvent } from '../support/log-files.js';
import { osSnapshotProjector, waitForHorizon } from '../support/projector-harness.js';
import { onCitus, useTestDatabase } from '../support/test-database.js';
import { pollUntil } from '../support/daemon-process.js';
import { withClient } from '../support/scratch-database.js';

const testDb = useTestDatabase();

describe('the lease', () => {
  it('fences a batch that outlasts it: a rival takes over (on Citus, once it ends and the lease lapses), and exactly one of them folds the events', async () => {
    await new EventStore(testDb.db).append('slow-batch', [sampleEvent(1), sampleEvent(2)]);
    await waitForHorizon(testDb.db);
    const projector = osSnapshotProjector(testDb.db, { leaseTtlMs: 500 });
    const rival = osSnapshotProjector(testDb.db, { leaseTtlMs: 500, owner: 'rival' });
    expect(await projector.lead()).toBe(true);

    // A lock on a snapshot table holds the leader's batch back past its lease's expiry.
    const blocker = new pg.Client({ connectionString: testDb.url });
    await blocker.connect();
    // Ended on a failure too: an open blocker would hold the horizon for the tests after.
    onTestFinished(() => blocker.end());
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE os_signals IN SHARE MODE');
    const batch = projector.step().then(
      (result) => result,
      (error: unknown) => error,
    );
    if (onCitus) {
      // On Citus a batch keeps the lease's row locked until it ends (docs/scale-out.md): the
      // rival waits for it instead of fencing it out. The batch renews the lease as it ends, so
      // the rival finds it held, and takes over once the leader has let it lapse. The rival
      // tries once the batch holds that row: before, it would find the lease live and give up.
      await pollUntil('the batch to lock the lease row', () => leaseRowLocked(testDb.url), { timeoutMs: 20_000, intervalMs: 20 });
      const rivalLeads = rival.lead();
      const early = await Promise.race([rivalLeads, new Promise((resolve) => setTimeout(() => resolve('waiting'), 1200))]);
      expect(early).toBe('waiting');
      await blocker.query('COMMIT');
      await blocker.end();
      expect(await batch).toMatchObject({ windowCount: 2, eventsApplied: 2 });
      expect(await rivalLeads).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 700));
      expect(await rival.lead()).toBe(true);
      expect(await rival.step()).toMatchObject({ windowCount: 0 });
    } else {
      await new Promise((resolve) => setTimeout(resolve, 1200));
      expect(await rival.lead()).toBe(true);
      const rivalBatch = rival.step();
      await blocker.query('COMMIT');
      await blocker.end();

      // The old leader's batch cannot commit under a lease that moved on: it is fenced out whole.
      expect(await batch).toBeInstanceOf(LeaseLostError);
      expect(await rivalBatch).toMatchObject({ windowCount: 2, eventsApplied: 2 });
    }
    await rival.releaseLease();
    const checkpoint = await testDb.db.selectFrom('projection_checkpoints').select('events_applied').where('projection', '=', 'os_snapshot').executeTakeFirstOrThrow();
    expect(checkpoint.events_applied).toBe(2);
    expect(await verifyOsSnapshots(testDb.db, { all: true })).toMatchObject({ mismatches: [], pending: [] });
  });

  it('lets a batch that outlasts it commit when nobody took over', async () => {
    await new EventStore(testDb.db).append('slow-alone', [sampleEvent(1)]);
    await waitForHorizon(testDb.db);
    const projector = osSnapshotProjector(testDb.db, { leaseTtlMs: 500 });
    expect(await projector.lead()).toBe(true);
    const blocker = new pg.Client({ connectionString: testDb.url });
    await blocker.connect();
    // Ended on a failure too: an open blocker would hold the horizon for the tests after.
    onTestFinished(() => blocker.end());
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE os_signals IN SHARE MODE');
    const batch = projector.step();
    await new Promise((resolve) => setTimeout(resolve, 1200));
    await blocker.query('COMMIT');
    await blocker.end();
    // Expired, but nobody took it (the epoch is still this leader's): the batch renews it and commits.
    expect(await batch).toMatchObject({ windowCount: 1, eventsApplied: 1 });
    await projector.releaseLease();
    expect(await verifyOsSnapshots(testDb.db, { sessions: ['slow-alone'] })).toMatchObject({ mismatches: [], pending: [] });
  });
});

/** Whether a transaction holds the row of os_snapshot's lease locked (a batch renewing it, until its commit). */
async function leaseRowLocked(url: string): Promise<boolean> {
  return withClient(url, async (probe) => {
    await probe.query('BEGIN');
    try {
      await probe.query("SELECT FROM projection_leases WHERE projection = 'os_snapshot' FOR UPDATE NOWAIT");
      return false;
    } catch (error) {
      if ((error as { code?: unknown }).code === '55P03') return true;
      throw error;
    } finally {
      await probe.query('ROLLBACK');
    }
  });
}
