import { type Kysely, sql } from 'kysely';
import { madeOsSnapshotTables } from './0002-os-snapshot-projection.js';

/**
 * Views that dashboards and audit queries read instead of the tables: each answers one
 * question with stable column names, and stays cheap filtered by `session_id` (the lookups go
 * through the tables' primary keys and indexes). Plain views: always current, nothing to
 * refresh.
 *
 * - `os_session_overview`: one row per stored session, its log and its snapshot side by side.
 * - `os_process_states`, `os_processes_by_state`: sub-agent processes by state, per session
 *   and for the whole fleet.
 * - `os_suspended_sessions`: sessions suspended now, with the reason and the pending calls.
 * - `os_signal_dispositions`: signals by disposition.
 * - `os_budget_events`: budget events with the time they were recorded.
 * - `os_event_activity`: every stored event without its body, for time series.
 * - `os_projection_lag`: how far each projection is behind the log, and who writes it.
 *
 * The OS snapshot's views are made only where 0002 of an earlier os-audit made its tables: the
 * projection makes them now (`projections/os-snapshot/migrations/0000-tables.ts`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // A database an earlier os-audit began: the projection makes these views elsewhere.
  if (await madeOsSnapshotTables(db)) await createOsSnapshotViews(db);

  await sql`
    CREATE VIEW os_event_activity AS
    SELECT recorded_at, session_id, seq, kind, turn
    FROM session_events`.execute(db);
  // Dashboards ask for the last hours of the log. The log is appended in time order, so a BRIN
  // index (a few pages, next to nothing per insert) turns a time range into a range of blocks.
  await sql`CREATE INDEX session_events_recorded_at_brin ON session_events USING brin (recorded_at)`.execute(db);

  // The backlog: events after the checkpoint in (transaction_id, position) order, the order the
  // projector reads in (a range of session_events_transaction_position_idx).
  // A function rather than a subquery of the view: planned with the checkpoint's own values,
  // the count is a short range of session_events_transaction_position_idx; planned for any
  // checkpoint, it would read the whole log at every look. It reads the log as its owner, so
  // that readers of the view need no access to the events.
  await sql`
    CREATE FUNCTION os_audit_backlog(after_transaction_id xid8, after_position bigint)
    RETURNS TABLE (lag_events bigint, oldest timestamptz)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    BEGIN
      RETURN QUERY
        SELECT count(*), min(e.recorded_at) FROM session_events e
        WHERE (e.transaction_id, e.position) > (after_transaction_id, after_position);
    END
    $$`.execute(db);
  await sql`
    CREATE VIEW os_projection_lag AS
    SELECT c.projection,
      c.position AS checkpoint_position,
      c.events_applied,
      backlog.lag_events,
      CASE WHEN backlog.lag_events = 0 THEN 0
           ELSE greatest(0, extract(epoch FROM now() - backlog.oldest)::float8) END AS lag_seconds,
      l.owner AS leader,
      coalesce(l.expires_at > clock_timestamp(), false) AS leader_live,
      c.updated_at
    FROM projection_checkpoints c
    LEFT JOIN projection_leases l ON l.projection = c.projection
    CROSS JOIN LATERAL os_audit_backlog(c.transaction_id, c.position) backlog`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP VIEW os_projection_lag`.execute(db);
  await sql`DROP VIEW os_event_activity`.execute(db);
  // Gone already where the projection's own migration made them and went down first.
  for (const view of OS_SNAPSHOT_VIEWS) await sql`DROP VIEW IF EXISTS ${sql.table(view)}`.execute(db);
  await sql`DROP FUNCTION os_audit_backlog(xid8, bigint)`.execute(db);
  await sql`DROP INDEX session_events_recorded_at_brin`.execute(db);
}

/** The OS snapshot's views, in the order `down` drops them. */
const OS_SNAPSHOT_VIEWS = [
  'os_budget_events',
  'os_signal_dispositions',
  'os_suspended_sessions',
  'os_processes_by_state',
  'os_process_states',
  'os_session_overview',
];

/** The OS snapshot's views as this migration made them (0007 changes `os_session_overview`). */
async function createOsSnapshotViews(db: Kysely<unknown>): Promise<void> {
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
      coalesce(s.page_in_count, 0) AS page_in_count
    FROM sessions h
    LEFT JOIN os_snapshots s ON s.session_id = h.session_id
    CROSS JOIN LATERAL (
      SELECT count(*) AS processes, count(*) FILTER (WHERE state = 'running') AS running_processes
      FROM os_processes WHERE session_id = h.session_id) p
    CROSS JOIN LATERAL (SELECT count(*) AS signals FROM os_signals WHERE session_id = h.session_id) g
    CROSS JOIN LATERAL (SELECT count(*) AS budget_exceeded FROM os_budget_exceeded WHERE session_id = h.session_id) b`.execute(db);

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
