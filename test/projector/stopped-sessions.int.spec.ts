import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { readSqlOsSnapshot, verifyOsSnapshots } from '../../src/deprecated-os-snapshot.js';
import { readProjectionStatus } from '../../src/projector/projection-status.js';
import type { StoppedSession } from '../../src/projector/sql/batch-sql.js';
import { EventStore } from '../../src/store/event-store.js';
import { osSnapshotProjector } from '../support/projector-harness.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { writeByHand } from '../support/write-by-hand.js';

/**
 * A log where one session holds an event the snapshot cannot read (a `suspended` whose turn is
 * a string: stored, as the store stores any object with a kind) between readable ones, beside a
 * clean session; `work` gets the unreadable event's position.
 */
async function withUnreadableEvent<T>(work: (db: TestDatabase, position: number) => Promise<T>): Promise<T> {
  const testDb = await createTestDatabase();
  try {
    const store = new EventStore(testDb.db);
    await store.append('clean', [{ kind: 'page_in', turn: 1, entry_count: 1 }]);
    await store.append('stopped', [{ kind: 'tool_gated', turn: 1, call_id: 'c1', tool: 'shell', reason: 'ask_user' }]);
    await store.append('stopped', [{ kind: 'suspended', turn: 'three', reason: 'ask_user' }]);
    await store.append('stopped', [{ kind: 'resumed', turn: 4, approved: [], denied: [] }]);
    await store.append('clean', [{ kind: 'page_out', turn: 2, message_count: 1 }]);
    const { rows } = await sql<{ position: number }>`SELECT position FROM session_events WHERE session_id = 'stopped' AND seq = 1`.execute(testDb.db);
    return await work(testDb, rows[0]!.position);
  } finally {
    await testDb.drop();
  }
}

const unreadable = (position: number): StoppedSession => ({
  session_id: 'stopped',
  seq: 1,
  position,
  kind: 'suspended',
  reason: 'unreadable',
  problem: 'field "turn": expected a u32 (an integer 0..4294967295), got "three"',
});

describe('an event the snapshot cannot read', () => {
  it('stops its own session at the fold of the events before it; every other session goes on', () =>
    withUnreadableEvent(async ({ db }, position) => {
      const stopped: StoppedSession[] = [];
      const report = await osSnapshotProjector(db, { onEvent: (event) => event.type === 'sessions_stopped' && stopped.push(...event.sessions) }).catchUp();
      expect(report).toMatchObject({ eventsApplied: 3, skipped: 0, stopped: 1 });
      expect(stopped).toEqual([unreadable(position)]);
      expect(await readSqlOsSnapshot(db, 'stopped')).toMatchObject({
        lastSeq: 0,
        snapshot: { tool_gated_count: 1, last_suspend: null, last_resumed_turn: null },
        stopped: { seq: 1, reason: 'unreadable', kind: 'suspended', position },
      });
      expect(await readSqlOsSnapshot(db, 'clean')).toMatchObject({ lastSeq: 1, stopped: null, snapshot: { page_in_count: 1, page_out_count: 1 } });
      const status = await readProjectionStatus(db, 'os_snapshot');
      expect(status).toMatchObject({ behind: { events: 0 }, blockedSessions: 1, blocked: [{ sessionId: 'stopped', seq: 1, reason: 'unreadable' }] });
      const { rows } = await sql`SELECT session_id, blocked_at_seq, kind, reason FROM os_blocked_sessions`.execute(db);
      expect(rows).toEqual([{ session_id: 'stopped', blocked_at_seq: 1, kind: 'suspended', reason: 'unreadable' }]);
      // verify proves the stop: the log's own fold stops at the same event, for the same reason.
      expect(await verifyOsSnapshots(db, { all: true })).toMatchObject({ checked: 2, mismatches: [], pending: [] });
    }));

  it('passes the stopped session over in later batches, and counts it once', () =>
    withUnreadableEvent(async ({ db }) => {
      await osSnapshotProjector(db).catchUp();
      const store = new EventStore(db);
      await store.append('stopped', [{ kind: 'page_out', turn: 5 }]);
      await store.append('clean', [{ kind: 'page_out', turn: 3 }]);
      const report = await osSnapshotProjector(db).catchUp();
      expect(report).toMatchObject({ eventsApplied: 1, stopped: 0 });
      expect((await readSqlOsSnapshot(db, 'stopped'))?.lastSeq).toBe(0);
      expect((await readSqlOsSnapshot(db, 'clean'))?.snapshot.page_out_count).toBe(2);
      expect(await verifyOsSnapshots(db, { all: true })).toMatchObject({ mismatches: [] });
    }));

  it('is set aside in projection_errors with --skip-invalid, and the session goes on', () =>
    withUnreadableEvent(async ({ db }, position) => {
      const report = await osSnapshotProjector(db, { skipInvalid: true }).catchUp();
      expect(report).toMatchObject({ eventsApplied: 4, skipped: 1, stopped: 0 });
      const errors = await db.selectFrom('projection_errors').selectAll().execute();
      expect(errors).toEqual([
        expect.objectContaining({ projection: 'os_snapshot', position, session_id: 'stopped', seq: 1, kind: 'suspended', problem: unreadable(position).problem }),
      ]);
      expect(await readSqlOsSnapshot(db, 'stopped')).toMatchObject({ lastSeq: 2, stopped: null, snapshot: { last_suspend: null, last_resumed_turn: 4, tool_gated_count: 1 } });
      expect(await verifyOsSnapshots(db, { all: true })).toMatchObject({ checked: 2, mismatches: [], pending: [] });
      expect((await readProjectionStatus(db, 'os_snapshot')).skippedEvents).toBe(1);
    }));

  it('is taken up again by a daemon started with --skip-invalid, from where the session stopped', () =>
    withUnreadableEvent(async ({ db }) => {
      await osSnapshotProjector(db).catchUp();
      const report = await osSnapshotProjector(db, { skipInvalid: true }).catchUp();
      expect(report).toMatchObject({ eventsApplied: 1, skipped: 1 });
      expect(await readSqlOsSnapshot(db, 'stopped')).toMatchObject({ lastSeq: 2, stopped: null, snapshot: { last_resumed_turn: 4, tool_gated_count: 1 } });
      expect((await readProjectionStatus(db, 'os_snapshot')).blockedSessions).toBe(0);
      expect(await verifyOsSnapshots(db, { all: true })).toMatchObject({ mismatches: [], pending: [] });
    }));

  it('keeps a daemon running, reporting the stop once', () =>
    withUnreadableEvent(async ({ db }) => {
      const stops: number[] = [];
      const stop = new AbortController();
      const running = osSnapshotProjector(db, { onEvent: (event) => event.type === 'sessions_stopped' && stops.push(event.count) }).run(stop.signal);
      await expect.poll(() => stops.length, { timeout: 10_000 }).toBe(1);
      await new EventStore(db).append('clean', [{ kind: 'page_in', turn: 9, entry_count: 1 }]);
      await expect.poll(async () => (await readSqlOsSnapshot(db, 'clean'))?.snapshot.page_in_count, { timeout: 10_000 }).toBe(2);
      expect(stops).toEqual([1]);
      expect((await readProjectionStatus(db, 'os_snapshot')).leader?.live).toBe(true);
      stop.abort();
      await running;
    }));

  it('leaves the CLI at exit 0, saying which sessions stopped; status names them', () =>
    withUnreadableEvent(async ({ url }) => {
      const env = { DATABASE_URL: url };
      const once = await runCliInProcess(['project', '--once'], { env });
      expect(once).toMatchObject({ code: 0 });
      expect(once.stdout).toMatch(/projected 3 events in 1 batch; 1 session stopped \(see os-audit status\)/);
      const status = await runCliInProcess(['status'], { env });
      expect(status.stdout).toMatch(/stopped: {4}1 session \(/);
      expect(status.stdout).toMatch(/"stopped" at seq 1 \(suspended\), since .*: field "turn": expected a u32/);
      expect(await runCliInProcess(['verify', '--all'], { env })).toMatchObject({ code: 0 });
      const snapshot = await runCliInProcess(['snapshot', 'stopped', '--at-seq', '2'], { env });
      expect(snapshot).toMatchObject({ code: 1 });
      expect(snapshot.stderr).toMatch(/session "stopped" stops at seq 1 .*its snapshot is the one after seq 0/);
    }));
});

// The database refuses a hole to every writer (migration 0009); a superuser who turns its
// triggers off (session_replication_role = replica) can still make one: see writeByHand.
describe('a hole in a session log (written around the store)', () => {
  it('stops that session only, even with --skip-invalid, while the others keep being projected', async () => {
    const testDb = await createTestDatabase();
    try {
      const store = new EventStore(testDb.db);
      await store.append('holed', [{ kind: 'page_in', turn: 1, entry_count: 1 }]);
      await writeByHand(testDb.db, 'holed', 2, '{"kind":"page_in","turn":2,"entry_count":1}');
      await store.append('whole', [{ kind: 'page_in', turn: 1, entry_count: 1 }]);
      for (const [round, skipInvalid] of [false, true].entries()) {
        // Appends after the hole: the holed session takes them (its head is an event), stays stopped.
        await store.append('holed', [{ kind: 'page_in', turn: 3 + round, entry_count: 1 }]);
        await store.append('whole', [{ kind: 'page_in', turn: 2 + round, entry_count: 1 }]);
        await osSnapshotProjector(testDb.db, { skipInvalid }).catchUp();
        expect(await readSqlOsSnapshot(testDb.db, 'holed')).toMatchObject({
          lastSeq: 0,
          stopped: { seq: 1, reason: 'hole', problem: 'seq 1 is missing from the log (the next stored event is seq 2)' },
          snapshot: { page_in_count: 1 },
        });
        expect(await readSqlOsSnapshot(testDb.db, 'whole')).toMatchObject({ lastSeq: 1 + round, stopped: null, snapshot: { page_in_count: 2 + round } });
      }
      expect(await store.lastSeq('holed')).toBe(4);
      expect(await verifyOsSnapshots(testDb.db, { all: true })).toMatchObject({ mismatches: [], pending: [] });
    } finally {
      await testDb.drop();
    }
  });

  it('stops a session at its very first event with an empty snapshot', async () => {
    const testDb = await createTestDatabase();
    try {
      await writeByHand(testDb.db, 'late', 3, '{"kind":"page_in","turn":2,"entry_count":1}');
      await osSnapshotProjector(testDb.db).catchUp();
      expect(await readSqlOsSnapshot(testDb.db, 'late')).toMatchObject({ lastSeq: -1, stopped: { seq: 0, reason: 'hole' }, snapshot: { page_in_count: 0 } });
      expect(await verifyOsSnapshots(testDb.db, { all: true })).toMatchObject({ mismatches: [], pending: [] });
    } finally {
      await testDb.drop();
    }
  });
});

describe('events written around the store', () => {
  it('are folded like any other when the snapshot can read them', async () => {
    const testDb = await createTestDatabase();
    try {
      await writeByHand(testDb.db, 'by-hand', 0, '{"kind":"budget_exceeded","turn":2,"budget":"tokens"}');
      await osSnapshotProjector(testDb.db).catchUp();
      expect((await readSqlOsSnapshot(testDb.db, 'by-hand'))?.snapshot.budget_exceeded).toEqual([{ turn: 2, budget: 'tokens' }]);
    } finally {
      await testDb.drop();
    }
  });

  it('must be objects whose kind is the kind column: the database refuses the rest', async () => {
    const testDb = await createTestDatabase();
    try {
      const insert = (kind: string, payload: string) =>
        sql`INSERT INTO session_events (session_id, seq, kind, payload) VALUES ('x', 0, ${kind}, ${payload}::json)`.execute(testDb.db);
      await expect(insert('page_in', '{"kind":"page_out"}')).rejects.toThrow(/session_events_payload_kind/);
      await expect(insert('page_in', '[{"kind":"page_in"}]')).rejects.toThrow(/session_events_payload_kind/);
      // What SQL's JSON functions cannot read (U+0000 escaped) never reaches the projector.
      await expect(insert('page_in', '{"kind":"page_in","x":"\\u0000"}')).rejects.toThrow(/unsupported Unicode escape sequence/);
    } finally {
      await testDb.drop();
    }
  });
});
