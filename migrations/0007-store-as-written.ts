import { type Kysely, sql } from 'kysely';
import { encodeEventText } from '../src/events/encode-event.js';
import { madeOsSnapshotTables } from './0002-os-snapshot-projection.js';

/**
 * The log keeps every event as the runtime wrote it, and a session the snapshot cannot read
 * stops alone (shared/spec/session-events.md, sections 1 and 3).
 *
 * - `session_events.payload` becomes `json`: the event's own text (white space outside strings
 *   removed), key order and number text as written. Where the text holds a `\u0000` or a lone
 *   surrogate escape, which PostgreSQL's JSON functions cannot read, `payload` holds a
 *   stand-in they can read and `payload_text` the exact event (see `encode-event.ts`).
 * - `payload ->> 'kind'` must equal `kind`: the kind column is the event's own, and every stored
 *   payload is an object SQL can read (a row written around os-audit's writers included).
 * - `validated` goes: the store no longer checks what a projection reads; each projection
 *   checks the events it reads, every time.
 * - `os_processes` keeps the fields of the latest event of each agent that the snapshot does
 *   not read (`role`, …) only when they have their usual type; `parent_session_id` may be missing.
 * - `projection_blocked_sessions`: a session a projection stopped at an event it cannot read, at
 *   a hole in its log, or where its fold failed in SQL; every other session goes on.
 * - The snapshot's field checks move out of the database into the projection's own SQL.
 *
 * Events stored before keep what jsonb kept of them: their values, keys in jsonb's order,
 * number text normalized. `session_events_stored_as_jsonb` says which they are, so that a
 * re-import compares them by value (`find-first-mismatch.ts`). The few whose exact text was
 * kept beside them (`payload_text`) are stored again from it as the store writes events now.
 * The OS snapshot is folded again from the start: the rules it reads events by changed.
 *
 * The snapshot's parts run only where an earlier os-audit made its tables (0002): the
 * projection makes them now, as they are after this migration.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE session_events
      ALTER COLUMN payload TYPE json USING payload::text::json,
      DROP COLUMN validated`.execute(db);
  await storeExactTextsAgain(db);
  await sql`
    ALTER TABLE session_events
      ADD CONSTRAINT session_events_payload_kind CHECK (coalesce(payload ->> 'kind' = kind, false))`.execute(db);
  // The ALTER TABLE above holds the table's lock: no event is being written meanwhile.
  await sql`
    CREATE TABLE session_events_stored_as_jsonb (through_position bigint NOT NULL)`.execute(db);
  await sql`
    INSERT INTO session_events_stored_as_jsonb SELECT coalesce(max(position), 0) FROM session_events`.execute(db);
  await sql`
    CREATE FUNCTION os_audit_same_json_value(a json, b json) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE AS $$
    BEGIN
      RETURN a::jsonb = b::jsonb;
    EXCEPTION WHEN others THEN
      RETURN false; -- a number beyond numeric: not the value of an event stored as jsonb
    END
    $$`.execute(db);
  await sql`GRANT SELECT ON session_events_stored_as_jsonb TO os_audit_writer`.execute(db);
  await sql`GRANT EXECUTE ON FUNCTION os_audit_same_json_value(json, json) TO os_audit_writer`.execute(db);
  // A database an earlier os-audit began: the snapshot's tables are there, to fold again.
  const snapshot = await madeOsSnapshotTables(db);
  if (snapshot) await foldOsSnapshotAgain(db);

  await sql`
    CREATE TABLE projection_blocked_sessions (
      projection text NOT NULL,
      session_id text NOT NULL,
      seq bigint NOT NULL,
      position bigint,
      kind text,
      reason text NOT NULL CHECK (reason IN ('unreadable', 'hole', 'failed')),
      problem text NOT NULL,
      blocked_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (projection, session_id)
    )`.execute(db);

  await sql`DROP FUNCTION os_snapshot_event_problem(text, jsonb)`.execute(db);
  await sql`DROP FUNCTION os_audit_u32_problem(jsonb, text)`.execute(db);
  await sql`DROP FUNCTION os_audit_string_problem(jsonb, text, boolean)`.execute(db);
  await sql`DROP FUNCTION os_audit_string_list_problem(jsonb, text)`.execute(db);

  await sql`
    CREATE VIEW os_blocked_sessions AS
    SELECT projection, session_id, seq AS blocked_at_seq, position, kind, reason, problem, blocked_at
    FROM projection_blocked_sessions`.execute(db);
  if (snapshot) await addBlockedSessionsToOverview(db);

  await sql`CREATE INDEX projection_errors_session_idx ON projection_errors (projection, session_id)`.execute(db);

  await sql`GRANT SELECT ON os_blocked_sessions TO os_audit_reader, os_audit_projector`.execute(db);
  await sql`GRANT SELECT, INSERT, UPDATE, DELETE ON projection_blocked_sessions TO os_audit_projector`.execute(db);
}

/** The OS snapshot emptied and its checkpoint moved back, to be folded again; its processes' other fields made optional. */
async function foldOsSnapshotAgain(db: Kysely<unknown>): Promise<void> {
  await sql`TRUNCATE os_snapshots, os_processes, os_signals, os_budget_exceeded`.execute(db);
  await sql`DELETE FROM projection_errors WHERE projection = 'os_snapshot'`.execute(db);
  await sql`
    UPDATE projection_checkpoints SET transaction_id = '0', position = 0, events_applied = 0, last_error = NULL, last_error_at = NULL
    WHERE projection = 'os_snapshot'`.execute(db);
  await sql`
    ALTER TABLE os_processes
      ALTER COLUMN parent_session_id DROP NOT NULL,
      ALTER COLUMN role DROP NOT NULL,
      ALTER COLUMN isolation DROP NOT NULL,
      ALTER COLUMN context_inheritance DROP NOT NULL,
      ALTER COLUMN permitted_capability_ids DROP NOT NULL`.execute(db);
}

/** `os_session_overview` with the session's stop and set-aside events. */
async function addBlockedSessionsToOverview(db: Kysely<unknown>): Promise<void> {
  // New columns go last: CREATE OR REPLACE keeps the view's existing columns as they are.
  await sql`
    CREATE OR REPLACE VIEW os_session_overview AS
    SELECT h.session_id,
      h.last_seq + 1 AS events,
      h.first_recorded_at,
      h.last_recorded_at,
      s.last_seq AS projected_seq,
      coalesce(s.last_suspend_seq > coalesce(s.last_resumed_seq, -1), false) AS suspended,
      s.last_suspend_reason,
      p.processes,
      p.running_processes,
      coalesce(s.tool_gated_count, 0) AS tool_gated_count,
      g.signals,
      b.budget_exceeded,
      coalesce(s.memory_written_count, 0) AS memory_written_count,
      coalesce(s.memory_queried_count, 0) AS memory_queried_count,
      coalesce(s.memory_validation_failed_count, 0) AS memory_validation_failed_count,
      coalesce(s.memory_retrieval_result_count, 0) AS memory_retrieval_result_count,
      coalesce(s.page_out_count, 0) AS page_out_count,
      coalesce(s.page_in_count, 0) AS page_in_count,
      k.seq AS blocked_at_seq,
      k.problem AS blocked_problem,
      x.skipped_events
    FROM sessions h
    LEFT JOIN os_snapshots s ON s.session_id = h.session_id
    LEFT JOIN projection_blocked_sessions k ON k.projection = 'os_snapshot' AND k.session_id = h.session_id
    CROSS JOIN LATERAL (
      SELECT count(*) AS processes, count(*) FILTER (WHERE state = 'running') AS running_processes
      FROM os_processes WHERE session_id = h.session_id) p
    CROSS JOIN LATERAL (SELECT count(*) AS signals FROM os_signals WHERE session_id = h.session_id) g
    CROSS JOIN LATERAL (SELECT count(*) AS budget_exceeded FROM os_budget_exceeded WHERE session_id = h.session_id) b
    CROSS JOIN LATERAL (
      SELECT count(*) AS skipped_events FROM projection_errors
      WHERE projection = 'os_snapshot' AND session_id = h.session_id) x`.execute(db);
}

/**
 * Events whose exact text was kept in `payload_text` (their jsonb held U+FFFD for a character
 * it cannot hold, or a number beyond numeric as a string): stored again from that text as
 * `encodeEventText` stores events now. The table's triggers refuse updates of history; this
 * is the one update a migration makes, so they are off around it.
 */
async function storeExactTextsAgain(db: Kysely<unknown>): Promise<void> {
  const { rows: keys } = await sql<{ session_id: string; seq: string }>`
    SELECT session_id, seq FROM session_events WHERE payload_text IS NOT NULL ORDER BY session_id, seq`.execute(db);
  if (keys.length === 0) return;
  await sql`ALTER TABLE session_events DISABLE TRIGGER session_events_refuse_update_delete`.execute(db);
  for (let start = 0; start < keys.length; start += 1000) {
    const chunk = keys.slice(start, start + 1000);
    const { rows } = await sql<{ session_id: string; seq: string; payload_text: string }>`
      SELECT e.session_id, e.seq, e.payload_text
      FROM unnest(${chunk.map((key) => key.session_id)}::text[], ${chunk.map((key) => key.seq)}::bigint[]) AS k(session_id, seq)
      JOIN session_events AS e USING (session_id, seq)`.execute(db);
    const encoded = rows.map((row) => reencoded(row.payload_text, row.session_id, Number(row.seq)));
    await sql`
      UPDATE session_events AS e SET payload = coalesce(u.payload::json, e.payload), payload_text = u.payload_text
      FROM unnest(${rows.map((row) => row.session_id)}::text[], ${rows.map((row) => row.seq)}::bigint[],
                  ${encoded.map((event) => event.payload)}::text[], ${encoded.map((event) => event.payloadText)}::text[])
           AS u(session_id, seq, payload, payload_text)
      WHERE e.session_id = u.session_id AND e.seq = u.seq`.execute(db);
  }
  await sql`ALTER TABLE session_events ENABLE ALWAYS TRIGGER session_events_refuse_update_delete`.execute(db);
}

/**
 * The row of an event as the store writes it now; one the store would refuse now (nested
 * deeper than it takes) keeps what it had, a payload SQL reads and its exact text.
 */
function reencoded(exactText: string, sessionId: string, seq: number): { payload: string | null; payloadText: string | null } {
  try {
    return encodeEventText(exactText, { sessionId, seq });
  } catch {
    return { payload: null, payloadText: exactText };
  }
}

export async function down(): Promise<void> {
  throw new Error('0007-store-as-written cannot be undone: the events keep their key order and number text only as json');
}
