import { type RawBuilder, sql } from 'kysely';
import { type EventBatchSql, eventBatchOf } from '../../../src/projector/projection.js';

/** The kinds whose fields the snapshot reads; the others are only counted or ignored. */
export const RECORD_KINDS = ['suspended', 'resumed', 'agent_process_changed', 'signal_disposed', 'budget_exceeded'] as const;

/**
 * What the snapshot keeps per session of a batch, as aggregates over its events (`kind`), for
 * the relation `sessions` of {@link osSnapshotFoldSql}: the counters.
 */
export const OS_SNAPSHOT_SESSION_AGGREGATES = sql`
  count(*) FILTER (WHERE kind = 'page_out') AS page_out_count,
  count(*) FILTER (WHERE kind = 'page_in') AS page_in_count,
  count(*) FILTER (WHERE kind = 'tool_gated') AS tool_gated_count,
  count(*) FILTER (WHERE kind = 'memory_written') AS memory_written_count,
  count(*) FILTER (WHERE kind = 'memory_queried') AS memory_queried_count,
  count(*) FILTER (WHERE kind = 'memory_validation_failed') AS memory_validation_failed_count,
  count(*) FILTER (WHERE kind = 'memory_retrieval_result') AS memory_retrieval_result_count`;

/**
 * The whole log, unchecked, as a batch of {@link applyOsSnapshotEventsSql}: folded into empty
 * tables, the set-based projection of everything in one statement (the limit the benchmark
 * compares the projector with).
 */
export const WHOLE_LOG: EventBatchSql = eventBatchOf(
  sql`(SELECT session_id, seq, kind, recorded_at, payload, NULL::text AS problem FROM session_events)`,
  OS_SNAPSHOT_SESSION_AGGREGATES,
);

/**
 * Folds events into the snapshot tables in one statement, set-based: counters are added per
 * session, the last suspend / resume among the events replaces the stored one, processes are
 * upserted by agent (keeping the seq of first appearance), signals and budget events are
 * appended. Rows with a `problem` (poison events set aside) are not folded, but still move the
 * session's `last_seq`.
 *
 * The batch is a batch of the projector, or (for the set-based limit) the {@link WHOLE_LOG}:
 * each session's events following its last folded one.
 *
 * @example
 * ```ts
 * await applyOsSnapshotEventsSql(WHOLE_LOG).execute(trx); // into empty tables
 * ```
 */
export function applyOsSnapshotEventsSql(batch: EventBatchSql): RawBuilder<unknown> {
  return sql`WITH ${osSnapshotFoldSql(batch)} SELECT (SELECT count(*) FROM snapshots) AS sessions`;
}

/**
 * The fold of {@link applyOsSnapshotEventsSql} as its common table expressions (`events`,
 * `per_session`, `records`, …, `snapshots`, `processes`, `signals`, `budgets`), for a statement
 * that puts its own before them (see `Projection.foldSql`). The rows the snapshot reads the
 * body of are picked out once (`records`), so that each table of the snapshot reads only those.
 */
export function osSnapshotFoldSql({ events, sessions }: EventBatchSql): RawBuilder<unknown> {
  return sql`
    events AS NOT MATERIALIZED (SELECT session_id, seq, kind, recorded_at, payload, problem FROM ${events} AS source),
    per_session AS NOT MATERIALIZED (SELECT * FROM ${sessions} AS source),
    records AS MATERIALIZED (
      SELECT session_id, seq, kind, recorded_at, payload FROM events
      WHERE kind IN (${sql.join(RECORD_KINDS.map((kind) => sql.lit(kind)))}) AND problem IS NULL
    ),
    last_suspend AS (
      SELECT DISTINCT ON (session_id) session_id, seq, recorded_at, payload FROM records
      WHERE kind = 'suspended' ORDER BY session_id, seq DESC
    ),
    last_resume AS (
      SELECT DISTINCT ON (session_id) session_id, seq, payload FROM records
      WHERE kind = 'resumed' ORDER BY session_id, seq DESC
    ),
    snapshots AS (
      INSERT INTO os_snapshots AS s (
        session_id, last_suspend_seq, last_suspend_turn, last_suspend_reason, last_suspend_pending_calls,
        last_suspended_at, last_resumed_seq, last_resumed_turn, page_out_count, page_in_count,
        tool_gated_count, memory_written_count, memory_queried_count, memory_validation_failed_count,
        memory_retrieval_result_count, last_seq, updated_at)
      SELECT a.session_id,
        su.seq, (su.payload ->> 'turn')::bigint, su.payload ->> 'reason',
        CASE WHEN su.seq IS NOT NULL
             THEN ARRAY(SELECT jsonb_array_elements_text(coalesce(su.payload -> 'pending_calls', '[]'))) END,
        su.recorded_at,
        re.seq, (re.payload ->> 'turn')::bigint,
        a.page_out_count, a.page_in_count, a.tool_gated_count, a.memory_written_count,
        a.memory_queried_count, a.memory_validation_failed_count, a.memory_retrieval_result_count,
        a.last_seq, now()
      FROM per_session a
      LEFT JOIN last_suspend su ON su.session_id = a.session_id
      LEFT JOIN last_resume re ON re.session_id = a.session_id
      ON CONFLICT (session_id) DO UPDATE SET
        last_suspend_seq = coalesce(excluded.last_suspend_seq, s.last_suspend_seq),
        last_suspend_turn = CASE WHEN excluded.last_suspend_seq IS NULL THEN s.last_suspend_turn ELSE excluded.last_suspend_turn END,
        last_suspend_reason = CASE WHEN excluded.last_suspend_seq IS NULL THEN s.last_suspend_reason ELSE excluded.last_suspend_reason END,
        last_suspend_pending_calls = CASE WHEN excluded.last_suspend_seq IS NULL THEN s.last_suspend_pending_calls ELSE excluded.last_suspend_pending_calls END,
        last_suspended_at = CASE WHEN excluded.last_suspend_seq IS NULL THEN s.last_suspended_at ELSE excluded.last_suspended_at END,
        last_resumed_seq = coalesce(excluded.last_resumed_seq, s.last_resumed_seq),
        last_resumed_turn = CASE WHEN excluded.last_resumed_seq IS NULL THEN s.last_resumed_turn ELSE excluded.last_resumed_turn END,
        page_out_count = s.page_out_count + excluded.page_out_count,
        page_in_count = s.page_in_count + excluded.page_in_count,
        tool_gated_count = s.tool_gated_count + excluded.tool_gated_count,
        memory_written_count = s.memory_written_count + excluded.memory_written_count,
        memory_queried_count = s.memory_queried_count + excluded.memory_queried_count,
        memory_validation_failed_count = s.memory_validation_failed_count + excluded.memory_validation_failed_count,
        memory_retrieval_result_count = s.memory_retrieval_result_count + excluded.memory_retrieval_result_count,
        last_seq = excluded.last_seq,
        updated_at = excluded.updated_at
      RETURNING 1
    ),
    processes AS (
      INSERT INTO os_processes AS p (
        session_id, agent_id, first_seq, last_seq, turn, parent_session_id, state, role, isolation,
        context_inheritance, result_termination, permitted_capability_ids, updated_at)
      SELECT DISTINCT ON (b.session_id, b.payload ->> 'agent_id')
        b.session_id, b.payload ->> 'agent_id', min(b.seq) OVER agent, b.seq, (b.payload ->> 'turn')::bigint,
        b.payload ->> 'parent_session_id', coalesce(b.payload ->> 'state', 'running'), b.payload ->> 'role',
        b.payload ->> 'isolation', b.payload ->> 'context_inheritance', b.payload ->> 'result_termination',
        ARRAY(SELECT jsonb_array_elements_text(coalesce(b.payload -> 'permitted_capability_ids', '[]'))),
        now()
      FROM records b
      WHERE b.kind = 'agent_process_changed'
      WINDOW agent AS (PARTITION BY b.session_id, b.payload ->> 'agent_id')
      ORDER BY b.session_id, b.payload ->> 'agent_id', b.seq DESC
      ON CONFLICT (session_id, agent_id) DO UPDATE SET
        last_seq = excluded.last_seq,
        turn = excluded.turn,
        parent_session_id = excluded.parent_session_id,
        state = excluded.state,
        role = excluded.role,
        isolation = excluded.isolation,
        context_inheritance = excluded.context_inheritance,
        result_termination = excluded.result_termination,
        permitted_capability_ids = excluded.permitted_capability_ids,
        updated_at = excluded.updated_at
      RETURNING 1
    ),
    signals AS (
      INSERT INTO os_signals (session_id, seq, turn, signal_id, disposition, queue_depth)
      SELECT session_id, seq, (payload ->> 'turn')::bigint, payload ->> 'signal_id', payload ->> 'disposition',
             (payload ->> 'queue_depth')::bigint
      FROM records
      WHERE kind = 'signal_disposed'
      RETURNING 1
    ),
    budgets AS (
      INSERT INTO os_budget_exceeded (session_id, seq, turn, budget)
      SELECT session_id, seq, (payload ->> 'turn')::bigint, payload ->> 'budget'
      FROM records
      WHERE kind = 'budget_exceeded'
      RETURNING 1
    )`;
}

/** Empties the snapshot tables, for a rebuild inside one transaction (readers keep the old rows until it commits). */
export function clearOsSnapshotSql(): RawBuilder<unknown>[] {
  return [
    sql`DELETE FROM os_signals`,
    sql`DELETE FROM os_budget_exceeded`,
    sql`DELETE FROM os_processes`,
    sql`DELETE FROM os_snapshots`,
  ];
}
