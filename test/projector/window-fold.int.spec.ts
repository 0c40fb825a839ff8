import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { osSnapshotProjection } from '../../projections/os-snapshot/os-snapshot-projection.js';
import { verifyOsSnapshots } from '../../projections/os-snapshot/verify-os-snapshots.js';
import type { DB } from '../../src/db/schema.js';
import { type Checkpoint, LOG_START } from '../../src/projector/checkpoint.js';
import { Lease } from '../../src/projector/lease.js';
import { runBatch } from '../../src/projector/run-batch.js';
import { foldWindowSql, type WindowFold } from '../../src/projector/sql/batch-sql.js';
import { EventStore } from '../../src/store/event-store.js';
import { sampleEvent } from '../support/log-files.js';
import { waitForHorizon } from '../support/projector-harness.js';
import { useTestDatabase } from '../support/test-database.js';
import { writeByHand } from '../support/write-by-hand.js';

const testDb = useTestDatabase({ perTest: true });
afterEach(() => {
  vi.restoreAllMocks();
});

async function append(sessionId: string, from: number, count: number): Promise<void> {
  await new EventStore(testDb.db).append(sessionId, Array.from({ length: count }, (_, i) => sampleEvent(from + i)));
}

/** What a batch may change: the snapshot tables. */
async function snapshotRows(db: Kysely<DB>) {
  const sessions = await db.selectFrom('os_snapshots').select(['session_id', 'last_seq', 'tool_gated_count']).orderBy('session_id').execute();
  const processes = await db.selectFrom('os_processes').select(['session_id', 'agent_id', 'last_seq']).orderBy('session_id').orderBy('agent_id').execute();
  const signals = await db.selectFrom('os_signals').select(['session_id', 'seq']).orderBy('session_id').orderBy('seq').execute();
  return { sessions, processes, signals };
}

/** The window after `from`, up to `limit` events, folded in one statement of its own transaction. */
async function foldWindow(from: Checkpoint, limit: number): Promise<WindowFold> {
  return testDb.db.transaction().execute(async (trx) => (await foldWindowSql(osSnapshotProjection, from, limit).execute(trx)).rows[0]!);
}

/** The last event of the log, in the projector's order. */
async function lastEvent(): Promise<Checkpoint> {
  const { rows } = await sql<{ transaction_id: string; position: number }>`
    SELECT transaction_id::text AS transaction_id, position FROM session_events ORDER BY transaction_id DESC, position DESC LIMIT 1`.execute(testDb.db);
  return { transactionId: rows[0]!.transaction_id, position: rows[0]!.position };
}

describe('a window folded straight from the log', () => {
  it('folds a simple window and says where it ends', async () => {
    await append('a', 0, 40);
    await append('b', 0, 25);
    await waitForHorizon(testDb.db);
    const end = await lastEvent();

    const result = await foldWindow(LOG_START, 1000);

    expect(result).toEqual({ window_count: 65, folded: true, end_transaction_id: end.transactionId, end_position: end.position });
    expect(await verifyOsSnapshots(testDb.db, { all: true })).toMatchObject({ mismatches: [], pending: [], checked: 2 });
  });

  it('ends at the limit, and the next window goes on from there', async () => {
    await append('a', 0, 30);
    await waitForHorizon(testDb.db);
    const first = await foldWindow(LOG_START, 20);
    expect(first).toMatchObject({ window_count: 20, folded: true });
    const second = await foldWindow({ transactionId: first.end_transaction_id!, position: first.end_position! }, 20);
    expect(second).toMatchObject({ window_count: 10, folded: true });
    expect(await verifyOsSnapshots(testDb.db, { all: true })).toMatchObject({ mismatches: [], pending: [], checked: 1 });
  });

  it('writes nothing when a session does not continue its folded events', async () => {
    await append('a', 0, 10);
    await waitForHorizon(testDb.db);
    await foldWindow(LOG_START, 1000);
    const before = await snapshotRows(testDb.db);

    // The same window again: its events are folded already.
    expect(await foldWindow(LOG_START, 1000)).toMatchObject({ window_count: 10, folded: false });
    expect(await snapshotRows(testDb.db)).toEqual(before);
  });

  it('writes nothing when the window holds a poison event', async () => {
    await append('clean', 0, 10);
    await writeByHand(testDb.db, 'poisoned', 0, '{"kind":"suspended","turn":"three","reason":"ask_user"}');
    await waitForHorizon(testDb.db);
    const before = await snapshotRows(testDb.db);

    expect(await foldWindow(LOG_START, 1000)).toMatchObject({ window_count: 11, folded: false });
    expect(await snapshotRows(testDb.db)).toEqual(before);
  });

  it('writes nothing when a session has a hole', async () => {
    await writeByHand(testDb.db, 'holed', 0, '{"kind":"page_out"}');
    await writeByHand(testDb.db, 'holed', 2, '{"kind":"page_in"}');
    await waitForHorizon(testDb.db);

    expect(await foldWindow(LOG_START, 1000)).toMatchObject({ window_count: 2, folded: false });
    expect(await snapshotRows(testDb.db)).toEqual({ sessions: [], processes: [], signals: [] });
  });

  it('is how a batch folds a simple window: the batch table stays unused', async () => {
    await append('a', 0, 1500);
    await waitForHorizon(testDb.db);
    const lease = new Lease(testDb.db, osSnapshotProjection.name, 'window-test', 5000);
    const held = (await lease.tryAcquire())!;
    const query = vi.spyOn(pg.Client.prototype, 'query');

    const result = await testDb.db.transaction().execute((trx) => runBatch(trx, osSnapshotProjection, lease, held, { batchSize: 5000, skipInvalid: false }));

    expect(result).toMatchObject({ windowCount: 1500, eventsApplied: 1500, skipped: 0 });
    const texts = query.mock.calls.map(([config]) => (typeof config === 'string' ? config : (config as { text: string }).text));
    expect(texts.filter((text) => /INSERT INTO os_audit_batch/.test(text))).toEqual([]);
    expect(await verifyOsSnapshots(testDb.db, { all: true })).toMatchObject({ mismatches: [], pending: [], checked: 1 });
  });
});
