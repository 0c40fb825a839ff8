import { type Kysely, sql } from 'kysely';

/**
 * A session's snapshot as the spec's JSON, built from its `os_snapshots` row `s` and its rows
 * of the list tables: the column `snapshot` of `os_snapshot_json`. `json`, not `jsonb`, keeps
 * the keys in the order they are built: the spec's order. Since `0001-snapshot-json-planned-once`,
 * also the body of the function that view calls.
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

/** The views, in the order `down` drops them. */
const VIEWS = [
  'os_budget_events',
  'os_signal_dispositions',
  'os_suspended_sessions',
  'os_processes_by_state',
  'os_process_states',
  'os_session_overview',
  'os_snapshot_json',
];

/** The tables, in the order `down` drops them (the session heads last). */
const TABLES = ['os_signals', 'os_budget_exceeded', 'os_processes', 'os_snapshots'];

/**
 * The OS audit snapshot's tables, indexes and views (shared/spec/session-events.md, section 3):
 *
 * - `os_snapshots`: the session heads, one row per session: the counters and the last suspend /
 *   resume; `last_seq` is the last event of the session folded in.
 * - `os_processes`: one row per (session, agent), upserted; `first_seq` keeps the snapshot's
 *   order (first appearance), the other columns the latest event's fields, with the ones the
 *   snapshot does not read (`role`, …) when they had their usual type.
 * - `os_signals`, `os_budget_exceeded`: one row per event.
 * - `os_snapshot_json`: each session's snapshot as the spec's JSON, keys in the spec's order.
 * - Dashboards, each answering one question with stable column names. `os_session_overview`:
 *   a stored session's log and snapshot side by side. `os_process_states` and
 *   `os_processes_by_state`: processes by state, per session and for the fleet.
 *   `os_suspended_sessions`: suspended now. `os_signal_dispositions`. `os_budget_events`: with
 *   the time each was recorded.
 *
 * The engine's migrations 0002, 0004, 0005 and 0007 of earlier os-audit versions made these
 * very objects: on a database they made, this migration finds `os_snapshots` and does nothing.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const { rows } = await sql<{ present: boolean }>`SELECT to_regclass('os_snapshots') IS NOT NULL AS present`.execute(db);
  if (rows[0]!.present) return;

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
      parent_session_id text,
      state text NOT NULL,
      role text,
      isolation text,
      context_inheritance text,
      result_termination text,
      permitted_capability_ids text[],
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

  // Lateral aggregates return one row (counts 0) also for a session without rows.
  await sql`
    CREATE VIEW os_session_overview AS
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

  await sql`
    CREATE VIEW os_process_states AS
    SELECT session_id, state, count(*) AS processes
    FROM os_processes
    GROUP BY session_id, state`.execute(db);

  await sql`
    CREATE VIEW os_processes_by_state AS
    SELECT state, count(*) AS processes, count(DISTINCT session_id) AS sessions
    FROM os_processes
    GROUP BY state`.execute(db);

  // The condition of the partial index os_snapshots_suspended_idx, word for word.
  await sql`
    CREATE VIEW os_suspended_sessions AS
    SELECT session_id,
      last_suspend_reason AS reason,
      last_suspend_pending_calls AS pending_calls,
      last_suspend_seq AS suspend_seq,
      last_suspend_turn AS suspend_turn,
      last_suspended_at AS suspended_at
    FROM os_snapshots
    WHERE last_suspend_seq > coalesce(last_resumed_seq, -1)`.execute(db);

  await sql`
    CREATE VIEW os_signal_dispositions AS
    SELECT disposition, count(*) AS signals, count(DISTINCT session_id) AS sessions, max(queue_depth) AS max_queue_depth
    FROM os_signals
    GROUP BY disposition`.execute(db);

  await sql`
    CREATE VIEW os_budget_events AS
    SELECT b.session_id, b.seq, b.turn, b.budget, e.recorded_at
    FROM os_budget_exceeded b
    JOIN session_events e ON e.session_id = b.session_id AND e.seq = b.seq`.execute(db);
}

/** Drops the snapshot's views and tables, whichever migrations made them. */
export async function down(db: Kysely<unknown>): Promise<void> {
  for (const view of VIEWS) await sql`DROP VIEW ${sql.table(view)}`.execute(db);
  for (const table of TABLES) await sql`DROP TABLE ${sql.table(table)}`.execute(db);
}
