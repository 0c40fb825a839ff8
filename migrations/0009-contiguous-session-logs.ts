import { type Kysely, sql } from 'kysely';

/**
 * Each session's log is exactly its seqs 0..last_seq. The database enforces it for every role
 * (the owner included). So a writer, by hand or by mistake, cannot leave a hole that stops the
 * session's projection, or an event its next append would collide with.
 *
 * - `session_events_contiguous` runs after each INSERT or COPY, once per statement, over the
 *   rows it added. Each session's new events have consecutive seqs, follow its stored log (seq
 *   0, or the one after a stored event) and go no further than the session's head.
 * - `sessions_head_at_last_event` (deferred to the commit, per head row inserted or moved): the
 *   head is the session's last stored event. The store moves a head before it copies the
 *   events in; at the commit both are there.
 *
 * With the unique (session_id, seq), seq >= 0, heads that only move forward and no deletes,
 * the log holds every seq up to its head and nothing past it. Both checks fail with SQLSTATE
 * 23514 (check_violation), the constraint named, the session and the seq in the message.
 * They are ordinary triggers: a superuser with session_replication_role = replica (a repair,
 * a logical replica) bypasses them; a hole made so stops that session's projection alone.
 * Logs stored before keep what they hold: a session broken before stays stopped alone.
 *
 * `sessions.last_recorded_at` is the time of the last append. The database sets it when the
 * head moves (`sessions_stamp_head`). An UPDATE may leave it or set it to now(); anything else
 * is refused. The writer role keeps that column's grant because os-audit's earlier writers set
 * it to now().
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION os_audit_check_appended_events() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
      bad record;
    BEGIN
      -- One row per session of the statement; the stored log and the heads are read once each.
      SELECT a.session_id, a.first_seq, a.last_seq, a.events, h.last_seq AS head
      INTO bad
      FROM (SELECT session_id, min(seq) AS first_seq, max(seq) AS last_seq, count(*) AS events
            FROM appended GROUP BY session_id) AS a
      LEFT JOIN sessions AS h ON h.session_id = a.session_id
      WHERE a.events <> a.last_seq - a.first_seq + 1
         OR (a.first_seq > 0 AND NOT EXISTS (
               SELECT FROM session_events AS e WHERE e.session_id = a.session_id AND e.seq = a.first_seq - 1))
         OR h.last_seq IS NULL OR a.last_seq > h.last_seq
      ORDER BY a.session_id
      LIMIT 1;
      IF NOT FOUND THEN
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
  await sql`
    CREATE TRIGGER session_events_contiguous
      AFTER INSERT ON session_events REFERENCING NEW TABLE AS appended
      FOR EACH STATEMENT EXECUTE FUNCTION os_audit_check_appended_events()`.execute(db);

  // The head as it is at the commit, not as this row event saw it: a transaction may move it again.
  await sql`
    CREATE FUNCTION os_audit_check_session_head() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
      head bigint;
      stored bigint;
    BEGIN
      SELECT s.last_seq, (SELECT max(e.seq) FROM session_events AS e WHERE e.session_id = s.session_id)
      INTO head, stored
      FROM sessions AS s WHERE s.session_id = NEW.session_id;
      IF stored IS DISTINCT FROM head THEN
        RAISE EXCEPTION 'session %: its head is at seq % but %', to_json(NEW.session_id), head,
          coalesce('its log ends at seq ' || stored, 'it has no event')
          USING ERRCODE = 'check_violation', CONSTRAINT = 'sessions_head_at_last_event', TABLE = 'sessions',
                HINT = 'a head moves only with its events: store seqs up to last_seq in the same transaction';
      END IF;
      RETURN NULL;
    END
    $$`.execute(db);
  await sql`
    CREATE CONSTRAINT TRIGGER sessions_head_at_last_event
      AFTER INSERT OR UPDATE OF last_seq ON sessions
      DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW EXECUTE FUNCTION os_audit_check_session_head()`.execute(db);

  await sql`
    CREATE FUNCTION os_audit_stamp_session_head() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.last_recorded_at IS DISTINCT FROM OLD.last_recorded_at AND NEW.last_recorded_at <> now() THEN
        RAISE EXCEPTION 'UPDATE on sessions: last_recorded_at is the time of the last append, set by the database (session %)',
          to_json(OLD.session_id)
          USING ERRCODE = 'insufficient_privilege';
      END IF;
      NEW.last_recorded_at := CASE WHEN NEW.last_seq > OLD.last_seq THEN now() ELSE OLD.last_recorded_at END;
      RETURN NEW;
    END
    $$`.execute(db);
  await sql`
    CREATE TRIGGER sessions_stamp_head
      BEFORE UPDATE ON sessions
      FOR EACH ROW EXECUTE FUNCTION os_audit_stamp_session_head()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER sessions_stamp_head ON sessions`.execute(db);
  await sql`DROP TRIGGER sessions_head_at_last_event ON sessions`.execute(db);
  await sql`DROP TRIGGER session_events_contiguous ON session_events`.execute(db);
  await sql`DROP FUNCTION os_audit_stamp_session_head()`.execute(db);
  await sql`DROP FUNCTION os_audit_check_session_head()`.execute(db);
  await sql`DROP FUNCTION os_audit_check_appended_events()`.execute(db);
}
