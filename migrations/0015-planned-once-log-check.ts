import { type Kysely, sql } from 'kysely';
import { storeIsDistributed } from '../src/db/distributed-store.js';
import { up as replannedChecks } from './0011-replanned-log-checks.js';

/**
 * The check of `session_events_contiguous` (0009, 0011) planned once per connection again, in
 * a plan that stays right however the log grows. 0011's planning at each run cost about as much
 * as the check itself. Now the function runs with sequential scans, hash joins and merge joins
 * disabled. So its one plan looks each session's head and predecessor event up by index, in
 * nested loops. The rules and messages are those of 0009 and 0011. On Citus the check stays
 * 0012's, planned at each run: it finds the colocated shards by name.
 *
 * Why: docs/design/contiguity-check-plan.md
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (await storeIsDistributed(db)) return;
  await sql`
    CREATE OR REPLACE FUNCTION os_audit_check_appended_events() RETURNS trigger
    LANGUAGE plpgsql
    SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
    AS $$
    DECLARE
      bad record;
    BEGIN
      -- One row per session of the statement; its head and its predecessor looked up once each.
      SELECT a.session_id, a.first_seq, a.last_seq, a.events, h.last_seq AS head,
             a.first_seq > 0 AND p.seq IS NULL AS detached
      INTO bad
      FROM (SELECT session_id, min(seq) AS first_seq, max(seq) AS last_seq, count(*) AS events
            FROM appended GROUP BY session_id) AS a
      LEFT JOIN sessions AS h ON h.session_id = a.session_id
      LEFT JOIN session_events AS p ON p.session_id = a.session_id AND p.seq = a.first_seq - 1
      WHERE a.events <> a.last_seq - a.first_seq + 1
         OR (a.first_seq > 0 AND p.seq IS NULL)
         OR h.last_seq IS NULL OR a.last_seq > h.last_seq
      ORDER BY a.session_id
      LIMIT 1;
      IF bad.session_id IS NULL THEN
        RETURN NULL;
      END IF;
      IF bad.events <> bad.last_seq - bad.first_seq + 1 THEN
        RAISE EXCEPTION 'session %: seq % would leave a hole in its log: seq % is not stored', to_json(bad.session_id),
          (SELECT min(seq) FROM appended AS n WHERE n.session_id = bad.session_id AND n.seq > bad.first_seq
             AND NOT EXISTS (SELECT FROM appended AS p WHERE p.session_id = n.session_id AND p.seq = n.seq - 1)),
          (SELECT min(seq) + 1 FROM appended AS n WHERE n.session_id = bad.session_id
             AND NOT EXISTS (SELECT FROM appended AS p WHERE p.session_id = n.session_id AND p.seq = n.seq + 1))
          USING ERRCODE = 'check_violation', CONSTRAINT = 'session_events_contiguous', TABLE = 'session_events',
                HINT = 'a session''s log holds seqs 0, 1, 2, ... without a hole';
      ELSIF bad.detached THEN
        RAISE EXCEPTION 'session %: seq % would leave a hole in its log: seq % is not stored', to_json(bad.session_id),
          bad.first_seq, bad.first_seq - 1
          USING ERRCODE = 'check_violation', CONSTRAINT = 'session_events_contiguous', TABLE = 'session_events',
                HINT = 'a session''s log holds seqs 0, 1, 2, ... without a hole';
      ELSE
        RAISE EXCEPTION 'session %: seq % is past the session''s head (%)', to_json(bad.session_id), bad.last_seq,
          coalesce('last_seq ' || bad.head, 'no row in sessions')
          USING ERRCODE = 'check_violation', CONSTRAINT = 'session_events_contiguous', TABLE = 'session_events',
                HINT = 'move the head (sessions.last_seq) to the last event in the same statement or transaction';
      END IF;
    END
    $$`.execute(db);
}

/** Back to 0011's check, planned at each run (its definition replaces this one's settings too). */
export async function down(db: Kysely<unknown>): Promise<void> {
  if (await storeIsDistributed(db)) return;
  await replannedChecks(db);
}
