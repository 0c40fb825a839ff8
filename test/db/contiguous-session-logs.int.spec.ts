import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { DB } from '../../src/db/schema.js';
import { importLogs } from '../../src/import/import-logs.js';
import { PostgresSessionLog } from '../../src/session-log/postgres-session-log.js';
import { encodeEventValue } from '../../src/events/encode-event.js';
import { EventStore } from '../../src/store/event-store.js';
import { appendAtHeadSql } from '../../src/store/sql/append-at-head.js';
import { emptyRows, pushRow } from '../../src/store/sql/event-rows.js';
import { sampleEvent, sessionLine, useTempDir, writeSessionFile } from '../support/log-files.js';
import { migrateTo } from '../support/migrate-to.js';
import { createTestDatabase, useTestDatabase } from '../support/test-database.js';

/** The rules of migration 0009, for the owner of the tables (a superuser here): they hold for every role. */
const testDb = useTestDatabase();
const tempDir = useTempDir();

const PAGE_IN = '{"kind":"page_in","turn":1,"entry_count":1}';

function insertEvents(db: Kysely<DB>, sessionId: string, seqs: readonly number[]) {
  return sql`
    INSERT INTO session_events (session_id, seq, kind, payload)
    SELECT ${sessionId}, seq, 'page_in', ${PAGE_IN}::json FROM unnest(${seqs}::bigint[]) AS seq`.execute(db);
}

/** Runs `statements` in one transaction: all of them and the commit, or the first error. */
function inTransaction(...statements: ((db: Kysely<DB>) => Promise<unknown>)[]) {
  return inTransactionOn(testDb.db, ...statements);
}

function inTransactionOn(db: Kysely<DB>, ...statements: ((db: Kysely<DB>) => Promise<unknown>)[]) {
  return db.transaction().execute(async (trx) => {
    for (const statement of statements) await statement(trx);
  });
}

/** The refusal of a contiguity rule: check_violation, the constraint, a message naming session and seq. */
function refusal(constraint: string, message: string) {
  return { code: '23514', constraint, message };
}

/** Sessions whose stored seqs are not exactly 0..last_seq (none, when the rules hold). */
async function brokenLogs(): Promise<string[]> {
  const { rows } = await sql<{ session_id: string }>`
    SELECT h.session_id FROM sessions AS h
    LEFT JOIN (SELECT session_id, count(*) AS events, min(seq) AS first_seq, max(seq) AS last_seq FROM session_events GROUP BY session_id) AS e
      ON e.session_id = h.session_id
    WHERE e.session_id IS NULL OR e.first_seq <> 0 OR e.last_seq <> h.last_seq OR e.events <> h.last_seq + 1
    UNION ALL
    SELECT DISTINCT e.session_id FROM session_events AS e WHERE NOT EXISTS (SELECT FROM sessions AS h WHERE h.session_id = e.session_id)`.execute(testDb.db);
  return rows.map((row) => row.session_id);
}

async function storedSeqs(sessionId: string): Promise<number[]> {
  const { rows } = await sql<{ seq: number }>`SELECT seq FROM session_events WHERE session_id = ${sessionId} ORDER BY seq`.execute(testDb.db);
  return rows.map((row) => row.seq);
}

describe('a session log holds exactly the seqs 0..last_seq, whoever writes it', () => {
  it('refuses to move a head past its events', async () => {
    await new EventStore(testDb.db).append('moved', [sampleEvent(0), sampleEvent(1)]);
    await expect(sql`UPDATE sessions SET last_seq = last_seq + 5 WHERE session_id = 'moved'`.execute(testDb.db)).rejects.toMatchObject(
      refusal('sessions_head_at_last_event', 'session "moved": its head is at seq 6 but its log ends at seq 1'),
    );
    expect(await new EventStore(testDb.db).lastSeq('moved')).toBe(1);
  });

  it('refuses a head without its events', async () => {
    await expect(sql`INSERT INTO sessions (session_id, last_seq) VALUES ('empty', 0)`.execute(testDb.db)).rejects.toMatchObject(
      refusal('sessions_head_at_last_event', 'session "empty": its head is at seq 0 but it has no event'),
    );
    await expect(inTransaction((db) => sql`INSERT INTO sessions (session_id, last_seq) VALUES ('short', 2)`.execute(db), (db) => insertEvents(db, 'short', [0, 1]))).rejects.toMatchObject(
      refusal('sessions_head_at_last_event', 'session "short": its head is at seq 2 but its log ends at seq 1'),
    );
  });

  it('refuses an event past its head, one without a head, and a hole', async () => {
    await new EventStore(testDb.db).append('ahead', [sampleEvent(0), sampleEvent(1)]);
    await expect(insertEvents(testDb.db, 'ahead', [2])).rejects.toMatchObject(
      refusal('session_events_contiguous', `session "ahead": seq 2 is past the session's head (last_seq 1)`),
    );
    await expect(insertEvents(testDb.db, 'headless', [0])).rejects.toMatchObject(
      refusal('session_events_contiguous', `session "headless": seq 0 is past the session's head (no row in sessions)`),
    );
    // A hole after the stored log, or inside the rows of one statement, even with the head moved along.
    await expect(inTransaction((db) => sql`UPDATE sessions SET last_seq = 4 WHERE session_id = 'ahead'`.execute(db), (db) => insertEvents(db, 'ahead', [3, 4]))).rejects.toMatchObject(
      refusal('session_events_contiguous', 'session "ahead": seq 3 would leave a hole in its log: seq 2 is not stored'),
    );
    await expect(inTransaction((db) => sql`UPDATE sessions SET last_seq = 6 WHERE session_id = 'ahead'`.execute(db), (db) => insertEvents(db, 'ahead', [2, 3, 5, 6]))).rejects.toMatchObject(
      refusal('session_events_contiguous', 'session "ahead": seq 5 would leave a hole in its log: seq 4 is not stored'),
    );
    expect(await storedSeqs('ahead')).toEqual([0, 1]);
    expect(await storedSeqs('headless')).toEqual([]);
  });

  it('takes a hand-written append that keeps the log whole: the head moved, then its events, in one transaction', async () => {
    await inTransaction((db) => sql`INSERT INTO sessions (session_id, last_seq) VALUES ('by-hand', 1)`.execute(db), (db) => insertEvents(db, 'by-hand', [0, 1]));
    await inTransaction((db) => sql`UPDATE sessions SET last_seq = 3 WHERE session_id = 'by-hand'`.execute(db), (db) => insertEvents(db, 'by-hand', [2, 3]));
    expect(await storedSeqs('by-hand')).toEqual([0, 1, 2, 3]);
  });

  it('sets last_recorded_at itself when a head moves, and refuses to have it set otherwise', async () => {
    const store = new EventStore(testDb.db);
    await store.append('timed', [sampleEvent(0)]);
    const recordedAt = async () => (await testDb.db.selectFrom('sessions').select('last_recorded_at').where('session_id', '=', 'timed').executeTakeFirstOrThrow()).last_recorded_at;
    const first = await recordedAt();
    await expect(sql`UPDATE sessions SET last_recorded_at = now() - interval '1 day' WHERE session_id = 'timed'`.execute(testDb.db)).rejects.toMatchObject({
      code: '42501',
      message: 'UPDATE on sessions: last_recorded_at is the time of the last append, set by the database (session "timed")',
    });
    // now() without a move keeps it (os-audit's earlier writers set it so).
    await sql`UPDATE sessions SET last_recorded_at = now() WHERE session_id = 'timed'`.execute(testDb.db);
    expect(await recordedAt()).toEqual(first);
    await store.append('timed', [sampleEvent(1)]);
    expect((await recordedAt()).getTime()).toBeGreaterThan(first.getTime());
  });

  it("keeps every write path of os-audit: at the head, at an expected seq, sequenced rows, COPY, import, the SDK's SessionLog", async () => {
    const store = new EventStore(testDb.db);
    const events = (count: number, from = 0) => Array.from({ length: count }, (_, index) => sampleEvent(from + index));
    await store.append('paths-head', events(3));
    await store.append('paths-head', events(2, 3), { expectedSeq: 2 });
    // More than a statement's worth: the head moves first, then COPY streams the events in.
    await store.append('paths-copy', events(600));
    await store.append('paths-copy', events(300, 600));
    const rows = emptyRows();
    for (const [sessionId, seq] of [['paths-rows-1', 0], ['paths-rows-1', 1], ['paths-rows-2', 0]] as const) {
      pushRow(rows, sessionId, seq, encodeEventValue(sampleEvent(seq), { sessionId, seq }));
    }
    await store.appendSequenced(rows);

    const dir = tempDir();
    for (const sessionId of ['paths-import-1', 'paths-import-2']) {
      writeSessionFile(dir, sessionId, Array.from({ length: 400 }, (_, seq) => sessionLine(seq, sampleEvent(seq))));
    }
    const report = await importLogs(store, dir);
    expect(report).toMatchObject({ failures: [], newEvents: 800 });

    const log = new PostgresSessionLog(testDb.db);
    expect(await Promise.all([0, 1, 2].map((turn) => log.append('paths-sdk', { kind: 'page_in', turn, entry_count: 1 })))).toEqual([0, 1, 2]);

    expect(Object.fromEntries(await store.lastSeqs(['paths-head', 'paths-copy', 'paths-rows-1', 'paths-rows-2', 'paths-import-1', 'paths-sdk']))).toEqual({
      'paths-head': 4,
      'paths-copy': 899,
      'paths-rows-1': 1,
      'paths-rows-2': 0,
      'paths-import-1': 399,
      'paths-sdk': 2,
    });
    expect(await brokenLogs()).toEqual([]);
  });

  it('keeps concurrent writers of one session gap-free', async () => {
    const store = new EventStore(testDb.db);
    await Promise.all(Array.from({ length: 8 }, (_, writer) => store.append('contended', writer % 2 === 0 ? [sampleEvent(writer)] : Array.from({ length: 300 }, (_, i) => sampleEvent(i)))));
    expect(await storedSeqs('contended')).toEqual(Array.from({ length: 4 + 4 * 300 }, (_, seq) => seq));
    expect(await brokenLogs()).toEqual([]);
  });

  it('rolls back to the rules before it (a hole by hand is taken again) and forward', async () => {
    const scratch = await createTestDatabase();
    try {
      await migrateTo(scratch.db, '0008-kernel-journal');
      await sql`INSERT INTO sessions (session_id, last_seq) VALUES ('rolled-back', 3)`.execute(scratch.db);
      await migrateTo(scratch.db, '0009-contiguous-session-logs');
      await expect(sql`INSERT INTO sessions (session_id, last_seq) VALUES ('rolled-forward', 3)`.execute(scratch.db)).rejects.toMatchObject({ code: '23514' });
    } finally {
      await scratch.drop();
    }
  });
});

// One server's check (0015); on Citus it stays 0012's, planned at each run. This folder is not
// among the citus-suites.
describe('the contiguity check, planned once per connection', () => {
  it('looks each session up by index however the log grew since the plan was made on an empty log, for a large append', async () => {
    const scratch = await createTestDatabase();
    const client = new pg.Client({ connectionString: scratch.url });
    await client.connect();
    try {
      const plans: string[] = [];
      client.on('notice', (notice) => plans.push(notice.message ?? ''));
      await client.query(`LOAD 'auto_explain'`);
      await client.query('SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = notice');
      const append = async (events: ReturnType<typeof sampleEvent>[]) => {
        const statement = appendAtHeadSql('grown', events.map((event) => encodeEventValue(event, {}))).compile(scratch.db);
        await client.query(statement.sql, [...statement.parameters]);
      };
      // A first append of many rows, for which a hash join over the whole (then empty) log is
      // the cheapest plan, and would be kept for the connection's later appends.
      await append(Array.from({ length: 5000 }, (_, i) => sampleEvent(i)));
      await inTransactionOn(
        scratch.db,
        (db) => sql`INSERT INTO sessions (session_id, last_seq) VALUES ('bulk', 49999)`.execute(db),
        (db) => sql`INSERT INTO session_events (session_id, seq, kind, payload) SELECT 'bulk', seq, 'page_in', ${PAGE_IN}::json FROM generate_series(0, 49999) AS seq`.execute(db),
      );
      plans.length = 0;
      await append([sampleEvent(5000)]);
      const check = plans.find((plan) => plan.includes('FROM appended GROUP BY'));
      expect(check).toBeDefined();
      expect(check).not.toMatch(/Seq Scan on (session_events|sessions) |Hash (\w+ )?Join|Merge (\w+ )?Join|hashed SubPlan/);
      expect(check).toMatch(/Index (Only )?Scan using session_events_session_seq_key on session_events/);
      expect(check).toMatch(/Index Scan using sessions_pkey on sessions/);
      // The chain's head update (0017) is planned once per connection too.
      const heads = plans.find((plan) => plan.includes('SET head_hash'));
      expect(heads).toBeDefined();
      expect(heads).not.toMatch(/Seq Scan on sessions |Hash (\w+ )?Join|Merge (\w+ )?Join/);
      expect(heads).toMatch(/Index Scan using sessions_pkey on sessions/);
    } finally {
      await client.end();
      await scratch.drop();
    }
  });

  it('rolls back to the check planned at each run, and forward', async () => {
    const scratch = await createTestDatabase();
    const settings = async () =>
      (await sql<{ settings: string[] | null }>`SELECT proconfig AS settings FROM pg_proc WHERE proname = 'os_audit_check_appended_events'`.execute(scratch.db)).rows[0]!.settings;
    try {
      expect(await settings()).toEqual(['enable_seqscan=off', 'enable_hashjoin=off', 'enable_mergejoin=off']);
      await migrateTo(scratch.db, '0014-sessions-by-last-activity');
      expect(await settings()).toBeNull();
      await expect(insertEvents(scratch.db, 'rolled-back', [1])).rejects.toMatchObject({ code: '23514' });
      await migrateTo(scratch.db, '0015-planned-once-log-check');
      expect(await settings()).not.toBeNull();
      await expect(insertEvents(scratch.db, 'rolled-forward', [1])).rejects.toMatchObject({ code: '23514' });
    } finally {
      await scratch.drop();
    }
  });
});
