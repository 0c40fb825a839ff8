import type { Kysely } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { osSnapshotProjection } from '../../projections/os-snapshot/os-snapshot-projection.js';
import { verifyOsSnapshots } from '../../projections/os-snapshot/verify-os-snapshots.js';
import { type PinnedConnection, withPinnedConnection } from '../../src/db/pinned-connection.js';
import type { DB } from '../../src/db/schema.js';
import { type Checkpoint, LOG_START } from '../../src/projector/checkpoint.js';
import { type HeldLease, Lease } from '../../src/projector/lease.js';
import { ProjectionHaltedError } from '../../src/projector/projection-halted-error.js';
import { type BatchOptions, PREPARED_FOLD_UP_TO, runBatch, runBatchInOneTrip } from '../../src/projector/run-batch.js';
import { EventStore } from '../../src/store/event-store.js';
import { sampleEvent } from '../support/log-files.js';
import { osSnapshotProjector, waitForHorizon } from '../support/projector-harness.js';
import { useTestDatabase } from '../support/test-database.js';
import { writeByHand } from '../support/write-by-hand.js';

const options: BatchOptions = { batchSize: 5000, skipInvalid: false };

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
  const checkpoint = await db.selectFrom('projection_checkpoints').selectAll().executeTakeFirstOrThrow();
  const sessions = await db.selectFrom('os_snapshots').select(['session_id', 'last_seq']).orderBy('session_id').execute();
  return { checkpoint, sessions };
}

/**
 * Runs `work` on one connection that has run a first batch in steps (so it has the batch table
 * and the prepared fold), under a held lease; `from` is where that batch left the checkpoint.
 */
async function afterFirstBatch(work: (connection: PinnedConnection, lease: Lease, held: HeldLease, from: Checkpoint) => Promise<void>): Promise<void> {
  await append('first', 0, 3);
  const lease = new Lease(testDb.db, osSnapshotProjection.name, 'one-trip-test', 5000);
  const held = (await lease.tryAcquire())!;
  await withPinnedConnection(testDb.db, async (connection) => {
    const first = await connection.db.transaction().execute((trx) => runBatch(trx, osSnapshotProjection, lease, held, options));
    expect(first.windowCount).toBe(3);
    await work(connection, lease, held, first.checkpoint);
  });
}

/** The batch did not run in one trip, and kept nothing. */
async function expectFallBackKeepingNothing(run: () => Promise<unknown>): Promise<void> {
  const before = await projectedState(testDb.db);
  expect(await run()).toBeUndefined();
  expect(await projectedState(testDb.db)).toEqual(before);
}

describe('a batch in one round trip', () => {
  it('folds a live-sized batch with one query and moves the checkpoint, as a batch in steps would', () =>
    afterFirstBatch(async (connection, lease, held, from) => {
      await append('first', 3, 4);
      await append('second', 0, 5);
      const query = vi.spyOn(connection.client, 'query');
      const result = await runBatchInOneTrip(connection, osSnapshotProjection, lease, held, from, options);
      expect(query).toHaveBeenCalledTimes(1);
      expect(result).toMatchObject({ windowCount: 9, eventsApplied: 9, skipped: 0 });
      const { checkpoint, sessions } = await projectedState(testDb.db);
      expect(result!.checkpoint).toEqual({ transactionId: checkpoint.transaction_id, position: checkpoint.position });
      expect(checkpoint.events_applied).toBe(12);
      expect(sessions).toEqual([
        { session_id: 'first', last_seq: 6 },
        { session_id: 'second', last_seq: 4 },
      ]);
      expect(await verifyOsSnapshots(testDb.db, { all: true })).toMatchObject({ mismatches: [], pending: [], checked: 2 });
    }));

  it('commits the lease renewal when there is nothing to fold', () =>
    afterFirstBatch(async (connection, lease, held, from) => {
      const expiry = async () => (await testDb.db.selectFrom('projection_leases').select('expires_at').executeTakeFirstOrThrow()).expires_at;
      const before = await expiry();
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await runBatchInOneTrip(connection, osSnapshotProjection, lease, held, from, options)).toEqual({
        windowCount: 0,
        eventsApplied: 0,
        skipped: 0,
        checkpoint: from,
      });
      expect((await expiry()).getTime()).toBeGreaterThan(before.getTime());
    }));

  it('keeps nothing when the checkpoint is not where the last batch left it', () =>
    afterFirstBatch(async (connection, lease, held) => {
      await append('first', 3, 2);
      await expectFallBackKeepingNothing(() => runBatchInOneTrip(connection, osSnapshotProjection, lease, held, LOG_START, options));
    }));

  it('keeps nothing once another owner took the lease', () =>
    afterFirstBatch(async (connection, lease, held, from) => {
      await append('first', 3, 2);
      await new Lease(testDb.db, osSnapshotProjection.name, 'rebuild', 5000).seize();
      await expectFallBackKeepingNothing(() => runBatchInOneTrip(connection, osSnapshotProjection, lease, held, from, options));
    }));

  it('keeps nothing when the batch holds a poison event; the batch in steps then names it', () =>
    afterFirstBatch(async (connection, lease, held, from) => {
      await writeByHand(testDb.db, 'first', 3, '{"kind":"suspended","turn":"three","reason":"ask_user"}');
      await waitForHorizon(testDb.db);
      await expectFallBackKeepingNothing(() => runBatchInOneTrip(connection, osSnapshotProjection, lease, held, from, options));
      const steps = connection.db.transaction().execute((trx) => runBatch(trx, osSnapshotProjection, lease, held, options));
      await expect(steps).rejects.toBeInstanceOf(ProjectionHaltedError);
    }));

  it(`keeps nothing when the batch is larger than ${PREPARED_FOLD_UP_TO} events; the batch in steps then folds it`, () =>
    afterFirstBatch(async (connection, lease, held, from) => {
      await append('large', 0, PREPARED_FOLD_UP_TO + 1);
      await expectFallBackKeepingNothing(() => runBatchInOneTrip(connection, osSnapshotProjection, lease, held, from, options));
      const steps = await connection.db.transaction().execute((trx) => runBatch(trx, osSnapshotProjection, lease, held, options));
      expect(steps.windowCount).toBe(PREPARED_FOLD_UP_TO + 1);
    }));

  it('keeps nothing on a connection that has not run a batch in steps', async () => {
    await append('first', 0, 3);
    const lease = new Lease(testDb.db, osSnapshotProjection.name, 'one-trip-test', 5000);
    const held = (await lease.tryAcquire())!;
    await withPinnedConnection(testDb.db, (connection) =>
      expectFallBackKeepingNothing(() => runBatchInOneTrip(connection, osSnapshotProjection, lease, held, LOG_START, options)),
    );
  });
});

describe('the projector', () => {
  it('runs its first batch in steps and the live-sized ones after it in one query each', async () => {
    await append('live', 0, 3);
    const projector = osSnapshotProjector(testDb.db);
    expect(await projector.lead()).toBe(true);
    const query = vi.spyOn(pg.Client.prototype, 'query');
    expect(await projector.step()).toMatchObject({ windowCount: 3 });
    expect(query.mock.calls.length).toBeGreaterThan(5);
    for (let round = 1; round <= 3; round++) {
      await append('live', 3 * round, 3);
      query.mockClear();
      expect(await projector.step()).toMatchObject({ windowCount: 3 });
      expect(query).toHaveBeenCalledTimes(1);
    }
    await projector.releaseLease();
    expect(await verifyOsSnapshots(testDb.db, { all: true })).toMatchObject({ mismatches: [], pending: [], checked: 1 });
  });
});
