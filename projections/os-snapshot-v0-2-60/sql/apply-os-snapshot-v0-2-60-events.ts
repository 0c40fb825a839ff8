import { type RawBuilder, sql } from 'kysely';
import type { EventBatchSql } from '../../../src/projector/projection.js';

/**
 * The v0.2.60 snapshot's fold as common table expressions over a batch (see
 * `Projection.foldSql`), a few set-based statements whatever its size: each session's counters
 * are added and its last suspend / resume among the events replaces the stored one, processes
 * are upserted by agent (keeping the seq of first appearance), and the four lists get a row per
 * event. The events come read (`OS_SNAPSHOT_V0_2_60_READS`): one typed column per field (a u64
 * `numeric`), missing ones already defaulted.
 *
 * @example
 * ```ts
 * await sql`WITH ${osSnapshotV0260FoldSql(eventBatchOf(osSnapshotV0260Projection, sql`session_events`))} SELECT`.execute(trx);
 * ```
 */
export function osSnapshotV0260FoldSql({ events, sessions }: EventBatchSql): RawBuilder<unknown> {
  return sql`
    v0260_records AS MATERIALIZED (SELECT * FROM ${events} AS source),
    v0260_last_suspend AS (
      SELECT DISTINCT ON (session_id) session_id, seq, recorded_at, turn, reason, pending_calls FROM v0260_records
      WHERE kind = 'suspended' ORDER BY session_id, seq DESC
    ),
    v0260_last_resume AS (
      SELECT DISTINCT ON (session_id) session_id, seq, turn FROM v0260_records
      WHERE kind = 'resumed' ORDER BY session_id, seq DESC
    ),
    v0260_snapshot_rows AS (
      INSERT INTO os_v0_2_60_snapshots AS s (
        session_id, last_seq, last_suspend_seq, last_suspend_turn, last_suspend_reason, last_suspend_pending_calls,
        last_suspended_at, last_resumed_seq, last_resumed_turn, page_out_count, page_in_count, tool_gated_count,
        memory_written_count, memory_queried_count, memory_validation_failed_count, memory_retrieval_result_count, updated_at)
      SELECT a.session_id, a.last_seq, su.seq, su.turn, su.reason, su.pending_calls, su.recorded_at, re.seq, re.turn,
        a.page_out_count, a.page_in_count, a.tool_gated_count, a.memory_written_count, a.memory_queried_count,
        a.memory_validation_failed_count, a.memory_retrieval_result_count, now()
      FROM ${sessions} AS a
      LEFT JOIN v0260_last_suspend su ON su.session_id = a.session_id
      LEFT JOIN v0260_last_resume re ON re.session_id = a.session_id
      ON CONFLICT (session_id) DO UPDATE SET
        last_seq = excluded.last_seq,
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
        updated_at = excluded.updated_at
      RETURNING 1
    ),
    v0260_process_rows AS (
      INSERT INTO os_v0_2_60_processes AS p (
        session_id, agent_id, first_seq, last_seq, turn, parent_session_id, state, parent_task_id, role, isolation,
        context_inheritance, result_termination, permitted_capability_ids, updated_at)
      SELECT DISTINCT ON (b.session_id, b.agent_id)
        b.session_id, b.agent_id, min(b.seq) OVER agent, b.seq, b.turn, b.parent_session_id, b.state, b.parent_task_id, b.role,
        b.isolation, b.context_inheritance, b.result_termination, b.permitted_capability_ids, now()
      FROM v0260_records b
      WHERE b.kind = 'agent_process_changed'
      WINDOW agent AS (PARTITION BY b.session_id, b.agent_id)
      ORDER BY b.session_id, b.agent_id, b.seq DESC
      ON CONFLICT (session_id, agent_id) DO UPDATE SET
        last_seq = excluded.last_seq,
        turn = excluded.turn,
        parent_session_id = excluded.parent_session_id,
        state = excluded.state,
        parent_task_id = excluded.parent_task_id,
        role = excluded.role,
        isolation = excluded.isolation,
        context_inheritance = excluded.context_inheritance,
        result_termination = excluded.result_termination,
        permitted_capability_ids = excluded.permitted_capability_ids,
        updated_at = excluded.updated_at
      RETURNING 1
    ),
    v0260_budget_exceeded_rows AS (
      INSERT INTO os_v0_2_60_budget_exceeded (session_id, seq, turn, operation_id, reservation_id, budget)
      SELECT session_id, seq, turn, operation_id, reservation_id, budget FROM v0260_records WHERE kind = 'budget_exceeded'
      RETURNING 1
    ),
    v0260_budget_usage_rows AS (
      INSERT INTO os_v0_2_60_budget_usage (session_id, seq, turn, operation_id, reservation_id, tokens, subagents, rounds)
      SELECT session_id, seq, turn, operation_id, reservation_id, tokens, subagents, rounds FROM v0260_records WHERE kind = 'budget_usage_reported'
      RETURNING 1
    ),
    v0260_cancellation_rows AS (
      INSERT INTO os_v0_2_60_cancellations (session_id, seq, turn, operation_id, reason, pending_call_ids)
      SELECT session_id, seq, turn, operation_id, reason, pending_call_ids FROM v0260_records WHERE kind = 'operation_cancelled'
      RETURNING 1
    ),
    v0260_signal_rows AS (
      INSERT INTO os_v0_2_60_signals (session_id, seq, turn, operation_id, delivery_id, attempt, signal_id, disposition, queue_depth)
      SELECT session_id, seq, turn, operation_id, delivery_id, attempt, signal_id, disposition, queue_depth
      FROM v0260_records WHERE kind = 'signal_delivery_disposed'
      RETURNING 1
    )`;
}
