import { type Kysely, sql } from 'kysely';

/**
 * A session's snapshot as the spec's JSON, built from its `os_snapshots` row `s` and its rows
 * of the list tables: the column `snapshot` of `os_snapshot_json`. `json`, not `jsonb`, keeps
 * the keys in the order they are built: the spec's order. Since `os_snapshot/0001`, also the
 * body of the function that view calls.
 */
export const osSnapshotJsonSql = sql`
  json_build_object(
    'last_suspend', CASE WHEN s.last_suspend_seq IS NULL THEN NULL ELSE json_build_object(
      'turn', s.last_suspend_turn,
      'reason', s.last_suspend_reason,
      'pending_calls', to_json(s.last_suspend_pending_calls)) END,
    'last_resumed_turn', s.last_resumed_turn,
    'process_by_agent', coalesce((
      SELECT json_agg(json_build_object(
               'turn', p.turn, 'agent_id', p.agent_id,
               'parent_session_id', p.parent_session_id, 'state', p.state) ORDER BY p.first_seq)
      FROM os_processes p WHERE p.session_id = s.session_id), '[]'::json),
    'budget_exceeded', coalesce((
      SELECT json_agg(json_build_object('turn', b.turn, 'budget', b.budget) ORDER BY b.seq)
      FROM os_budget_exceeded b WHERE b.session_id = s.session_id), '[]'::json),
    'signals', coalesce((
      SELECT json_agg(json_build_object(
               'turn', g.turn, 'signal_id', g.signal_id,
               'disposition', g.disposition, 'queue_depth', g.queue_depth) ORDER BY g.seq)
      FROM os_signals g WHERE g.session_id = s.session_id), '[]'::json),
    'page_out_count', s.page_out_count,
    'page_in_count', s.page_in_count,
    'tool_gated_count', s.tool_gated_count,
    'memory_written_count', s.memory_written_count,
    'memory_queried_count', s.memory_queried_count,
    'memory_validation_failed_count', s.memory_validation_failed_count,
    'memory_retrieval_result_count', s.memory_retrieval_result_count
  )`;

/**
 * The OS audit snapshot, materialized (shared/spec/session-events.md, section 3), and the
 * projector's bookkeeping.
 *
 * - `os_snapshots`: one row per session, the counters and the last suspend / resume; `last_seq`
 *   is the last event of the session folded in (the projector applies only the next one).
 * - `os_processes`: one row per (session, agent), upserted; `first_seq` keeps the snapshot's
 *   order (first appearance), the other columns the latest event's fields.
 * - `os_signals`, `os_budget_exceeded`: one row per event.
 * - `os_snapshot_json`: each session's snapshot as the spec's JSON, keys in the spec's order.
 * - `projection_checkpoints`: how far each projection has read, in (transaction_id, position)
 *   order, moved only by a compare-and-set; `projection_leases`: which projector may write
 *   (owner, epoch as a fencing token, expiry); `projection_errors`: events set aside by
 *   `--skip-invalid`.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE os_snapshots (
      session_id text PRIMARY KEY,
      last_suspend_seq bigint,
      last_suspend_turn bigint,
      last_suspend_reason text,
      last_suspend_pending_calls text[],
      last_suspended_at timestamptz,
      last_resumed_seq bigint,
      last_resumed_turn bigint,
      page_out_count bigint NOT NULL DEFAULT 0,
      page_in_count bigint NOT NULL DEFAULT 0,
      tool_gated_count bigint NOT NULL DEFAULT 0,
      memory_written_count bigint NOT NULL DEFAULT 0,
      memory_queried_count bigint NOT NULL DEFAULT 0,
      memory_validation_failed_count bigint NOT NULL DEFAULT 0,
      memory_retrieval_result_count bigint NOT NULL DEFAULT 0,
      last_seq bigint NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((last_suspend_seq IS NULL) = (last_suspend_turn IS NULL))
    )`.execute(db);
  // Dashboards: sessions suspended most recently, and those still suspended.
  await sql`
    CREATE INDEX os_snapshots_last_suspended_at_idx ON os_snapshots (last_suspended_at DESC)
    WHERE last_suspend_seq IS NOT NULL`.execute(db);
  await sql`
    CREATE INDEX os_snapshots_suspended_idx ON os_snapshots (last_suspend_reason)
    WHERE last_suspend_seq > coalesce(last_resumed_seq, -1)`.execute(db);

  await sql`
    CREATE TABLE os_processes (
      session_id text NOT NULL,
      agent_id text NOT NULL,
      first_seq bigint NOT NULL,
      last_seq bigint NOT NULL,
      turn bigint NOT NULL,
      parent_session_id text NOT NULL,
      state text NOT NULL,
      role text NOT NULL,
      isolation text NOT NULL,
      context_inheritance text NOT NULL,
      result_termination text,
      permitted_capability_ids text[] NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (session_id, agent_id)
    )`.execute(db);
  await sql`CREATE INDEX os_processes_state_idx ON os_processes (state, session_id)`.execute(db);
  await sql`CREATE INDEX os_processes_parent_idx ON os_processes (parent_session_id)`.execute(db);

  await sql`
    CREATE TABLE os_signals (
      session_id text NOT NULL,
      seq bigint NOT NULL,
      turn bigint NOT NULL,
      signal_id text NOT NULL,
      disposition text NOT NULL,
      queue_depth bigint NOT NULL,
      PRIMARY KEY (session_id, seq)
    )`.execute(db);
  await sql`CREATE INDEX os_signals_disposition_idx ON os_signals (disposition, session_id)`.execute(db);

  await sql`
    CREATE TABLE os_budget_exceeded (
      session_id text NOT NULL,
      seq bigint NOT NULL,
      turn bigint NOT NULL,
      budget text NOT NULL,
      PRIMARY KEY (session_id, seq)
    )`.execute(db);
  await sql`CREATE INDEX os_budget_exceeded_budget_idx ON os_budget_exceeded (budget, session_id)`.execute(db);

  await sql`CREATE VIEW os_snapshot_json AS SELECT s.session_id, ${osSnapshotJsonSql} AS snapshot FROM os_snapshots s`.execute(db);

  await sql`
    CREATE TABLE projection_checkpoints (
      projection text PRIMARY KEY,
      transaction_id xid8 NOT NULL DEFAULT '0',
      position bigint NOT NULL DEFAULT 0,
      epoch bigint NOT NULL DEFAULT 0,
      events_applied bigint NOT NULL DEFAULT 0,
      updated_at timestamptz NOT NULL DEFAULT now(),
      last_error text,
      last_error_at timestamptz
    )`.execute(db);
  await sql`
    CREATE TABLE projection_leases (
      projection text PRIMARY KEY,
      owner text NOT NULL,
      epoch bigint NOT NULL,
      acquired_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL
    )`.execute(db);
  await sql`
    CREATE TABLE projection_errors (
      projection text NOT NULL,
      position bigint NOT NULL,
      session_id text NOT NULL,
      seq bigint NOT NULL,
      kind text NOT NULL,
      problem text NOT NULL,
      skipped_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (projection, position)
    )`.execute(db);
  await sql`INSERT INTO projection_checkpoints (projection) VALUES ('os_snapshot')`.execute(db);

  // Field checks of the snapshot's readers; each gives a message naming the field, or NULL.
  await sql`
    CREATE FUNCTION os_audit_u32_problem(e jsonb, field text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT CASE
        WHEN NOT e ? field THEN format('field "%s": required field is missing', field)
        WHEN jsonb_typeof(e -> field) = 'number' AND (e ->> field) ~ '^[0-9]{1,10}$'
             AND (e ->> field)::bigint <= 4294967295 THEN NULL
        ELSE format('field "%s": expected a u32 (an integer 0..4294967295), got %s', field, e -> field)
      END
    $$`.execute(db);
  await sql`
    CREATE FUNCTION os_audit_string_problem(e jsonb, field text, optional boolean) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT CASE
        WHEN NOT e ? field THEN CASE WHEN optional THEN NULL ELSE format('field "%s": required field is missing', field) END
        WHEN jsonb_typeof(e -> field) = 'string' THEN NULL
        WHEN optional AND jsonb_typeof(e -> field) = 'null' THEN NULL
        ELSE format('field "%s": expected a string, got %s', field, e -> field)
      END
    $$`.execute(db);
  await sql`
    CREATE FUNCTION os_audit_string_list_problem(e jsonb, field text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT CASE
        WHEN NOT e ? field THEN NULL
        WHEN jsonb_typeof(e -> field) <> 'array' THEN format('field "%s": expected an array of strings, got %s', field, e -> field)
        ELSE (SELECT format('field "%s[%s]": expected a string, got %s', field, i - 1, x)
              FROM jsonb_array_elements(e -> field) WITH ORDINALITY AS a(x, i)
              WHERE jsonb_typeof(x) <> 'string' ORDER BY i LIMIT 1)
      END
    $$`.execute(db);
  // What makes a stored event unreadable by the snapshot: the twin of
  // validateEvent(event, { fields: 'snapshot' }). NULL when the event is fine.
  await sql`
    CREATE FUNCTION os_snapshot_event_problem(kind text, e jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT CASE
        WHEN kind NOT IN ('suspended', 'resumed', 'agent_process_changed', 'signal_disposed', 'budget_exceeded')
          THEN NULL
        ELSE coalesce(
          os_audit_u32_problem(e, 'turn'),
          CASE kind
            WHEN 'suspended' THEN coalesce(
              os_audit_string_problem(e, 'reason', false),
              os_audit_string_list_problem(e, 'pending_calls'))
            WHEN 'agent_process_changed' THEN coalesce(
              os_audit_string_problem(e, 'agent_id', false),
              os_audit_string_problem(e, 'parent_session_id', false),
              os_audit_string_problem(e, 'role', false),
              os_audit_string_problem(e, 'isolation', false),
              os_audit_string_problem(e, 'context_inheritance', false),
              CASE WHEN e ? 'state' THEN os_audit_string_problem(e, 'state', false) END,
              os_audit_string_list_problem(e, 'permitted_capability_ids'),
              os_audit_string_problem(e, 'result_termination', true))
            WHEN 'signal_disposed' THEN coalesce(
              os_audit_string_problem(e, 'signal_id', false),
              os_audit_string_problem(e, 'disposition', false),
              os_audit_u32_problem(e, 'queue_depth'))
            WHEN 'budget_exceeded' THEN os_audit_string_problem(e, 'budget', false)
          END)
      END
    $$`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP VIEW os_snapshot_json`.execute(db);
  for (const table of ['os_snapshots', 'os_processes', 'os_signals', 'os_budget_exceeded', 'projection_checkpoints', 'projection_leases', 'projection_errors']) {
    await sql`DROP TABLE ${sql.table(table)}`.execute(db);
  }
  await sql`DROP FUNCTION os_snapshot_event_problem(text, jsonb)`.execute(db);
  await sql`DROP FUNCTION os_audit_u32_problem(jsonb, text)`.execute(db);
  await sql`DROP FUNCTION os_audit_string_problem(jsonb, text, boolean)`.execute(db);
  await sql`DROP FUNCTION os_audit_string_list_problem(jsonb, text)`.execute(db);
}
