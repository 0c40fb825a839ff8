import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { verifyOsSnapshots } from '../../src/deprecated-os-snapshot.js';
import type { DB } from '../../src/db/schema.js';
import { EventStore } from '../../src/store/event-store.js';
import { sampleEvent } from '../support/log-files.js';
import { osSnapshotProjector } from '../support/projector-harness.js';
import { onCitus, useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();

const events = (count: number, from = 0) => Array.from({ length: count }, (_, i) => sampleEvent(from + i));

/**
 * Runs `work` in a transaction that stays open until `release()` is called; `commit: false`
 * rolls it back instead.
 */
function openTransaction(db: Kysely<DB>, work: (store: EventStore) => Promise<void>, options: { commit: boolean } = { commit: true }) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let ready!: () => void;
  const isReady = new Promise<void>((resolve) => (ready = resolve));
  const done = new EventStore(db)
    .transaction(async (store) => {
      await work(store);
      ready();
      await released;
      if (!options.commit) throw new Error('rolled back on purpose');
    })
    .catch((error: Error) => {
      ready();
      if (error.message !== 'rolled back on purpose') throw error;
    });
  return { ready: isReady, release, done };
}

async function foldedSeqs(db: Kysely<DB>): Promise<Record<string, number>> {
  const rows = await db.selectFrom('os_snapshots').select(['session_id', 'last_seq']).execute();
  return Object.fromEntries(rows.map((row) => [row.session_id, row.last_seq]));
}

async function eventsApplied(db: Kysely<DB>): Promise<number> {
  const row = await db.selectFrom('projection_checkpoints').select('events_applied').where('projection', '=', 'os_snapshot').executeTakeFirstOrThrow();
  return row.events_applied;
}

describe('events committed out of position order', () => {
  it('are neither skipped nor applied twice, with a rolled-back append in the middle', async () => {
    const db = testDb.db;
    const store = new EventStore(db);
    const projector = osSnapshotProjector(db, { batchSize: 3 });
    expect(await projector.lead()).toBe(true);

    // Lower positions, held open.
    const slow = openTransaction(db, (s) => s.append('ooo-slow', events(4)).then(() => undefined));
    await slow.ready;
    // A rolled-back append takes positions too.
    const aborted = openTransaction(db, (s) => s.append('ooo-aborted', events(3)).then(() => undefined), { commit: false });
    await aborted.ready;
    aborted.release();
    await aborted.done;
    // Higher positions, committed first.
    await store.append('ooo-fast', events(5));

    // The projector runs while the slow transaction is open: it must not move past it. On Citus
    // it reads each session by seq, so the committed session is folded, the open one waits.
    while ((await projector.step()).windowCount > 0);
    expect(await foldedSeqs(db)).toEqual(onCitus ? { 'ooo-fast': 4 } : {});

    slow.release();
    await slow.done;
    const firstPositions = await positions(db);
    expect(firstPositions['ooo-slow']!).toBeLessThan(firstPositions['ooo-fast']!);
    await projector.catchUp();

    expect(await foldedSeqs(db)).toEqual({ 'ooo-slow': 3, 'ooo-fast': 4 });
    expect(await eventsApplied(db)).toBe(9);
    const report = await verifyOsSnapshots(db, { all: true });
    expect(report.mismatches).toEqual([]);
    expect(report.pending).toEqual([]);
  });

  it("fold a session's events in seq order when an older transaction appends after a younger one", async () => {
    const db = testDb.db;
    const store = new EventStore(db);
    // The older transaction takes its transaction id first (by appending elsewhere) ...
    let appendLater!: () => void;
    const later = new Promise<void>((resolve) => (appendLater = resolve));
    let olderHasId!: () => void;
    const olderHasIdNow = new Promise<void>((resolve) => (olderHasId = resolve));
    const older = store.transaction(async (s) => {
      await s.append('inv-other', events(2));
      olderHasId();
      await later;
      // ... and appends to the shared session only after the younger one committed there.
      await s.append('inv-shared', events(3, 3));
    });
    await olderHasIdNow;
    await store.append('inv-shared', events(3)); // the younger transaction: seqs 0..2
    appendLater();
    await older;

    const ids = await sql<{ seq: number; xid: string }>`
      SELECT seq, transaction_id::text AS xid FROM session_events WHERE session_id = 'inv-shared' ORDER BY seq`.execute(db);
    // Seqs 3..5 were written by the transaction with the lower id: (xid, position) order puts them first.
    expect(BigInt(ids.rows[3]!.xid)).toBeLessThan(BigInt(ids.rows[0]!.xid));

    const applied = await eventsApplied(db);
    const report = await osSnapshotProjector(db, { batchSize: 1 }).catchUp();
    expect(report.eventsApplied).toBe(8);
    expect(await eventsApplied(db)).toBe(applied + 8);
    expect((await foldedSeqs(db))['inv-shared']).toBe(5);
    const verified = await verifyOsSnapshots(db, { sessions: ['inv-shared', 'inv-other'] });
    expect(verified.mismatches).toEqual([]);
  });
});

async function positions(db: Kysely<DB>): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('session_events')
    .select(['session_id', (eb) => eb.fn.min<number>('position').as('first')])
    .groupBy('session_id')
    .execute();
  return Object.fromEntries(rows.map((row) => [row.session_id, Number(row.first)]));
}
