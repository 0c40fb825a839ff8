import { type Kysely, sql } from 'kysely';
import { down as dropChecks, up as createChecks } from './0009-contiguous-session-logs.js';

/**
 * The check of 0009 `session_events_contiguous` planned at each run (`EXECUTE`) rather than
 * once per connection. PL/pgSQL kept the first plan of its query, which has no parameters. Made
 * on a small `session_events`, that plan scanned the whole log on every append. An append of 100
 * events into a log of 40,000 took 27 ms; planned at each run, 4 ms. The rules and messages are
 * those of 0009. `sessions_head_at_last_event` looks a session up by a parameter, so it stays as
 * it is.
 *
 * Why: docs/design/contiguity-check-plan.md
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION os_audit_check_appended_events() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
      bad record;
    BEGIN
      -- One row per session of the statement; the stored log and the heads are read once each.
      EXECUTE $query$
        SELECT a.session_id, a.first_seq, a.last_seq, a.events, h.last_seq AS head
        FROM (SELECT session_id, min(seq) AS first_seq, max(seq) AS last_seq, count(*) AS events
              FROM appended GROUP BY session_id) AS a
        LEFT JOIN sessions AS h ON h.session_id = a.session_id
        WHERE a.events <> a.last_seq - a.first_seq + 1
           OR (a.first_seq > 0 AND NOT EXISTS (
                 SELECT FROM session_events AS e WHERE e.session_id = a.session_id AND e.seq = a.first_seq - 1))
           OR h.last_seq IS NULL OR a.last_seq > h.last_seq
        ORDER BY a.session_id
        LIMIT 1
      $query$ INTO bad;
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
      ELSIF bad.first_seq > 0 AND NOT EXISTS (
              SELECT FROM session_events AS e WHERE e.session_id = bad.session_id AND e.seq = bad.first_seq - 1) THEN
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

/** Back to 0009's function: the same check, planned once per connection. */
export async function down(db: Kysely<unknown>): Promise<void> {
  await dropChecks(db);
  await createChecks(db);
}
