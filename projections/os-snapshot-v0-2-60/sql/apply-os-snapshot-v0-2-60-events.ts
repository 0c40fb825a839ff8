import { type RawBuilder, sql } from 'kysely';
import type { EventBatchSql } from '../../../src/projector/projection.js';
import { snapshotHeadsSql } from '../../os-snapshot/sql/snapshot-heads-sql.js';

/**
 * The v0.2.60 snapshot's fold as common table expressions over a batch (see
 * `Projection.foldSql`), a few set-based statements whatever its size: each session's row as the
 * seed's (`snapshotHeadsSql`: counters added, the last suspend / resume replacing the stored
 * one), processes upserted by agent (keeping the seq of first appearance), and a row per event
 * in each of the four lists. The events come read (`OS_SNAPSHOT_V0_2_60_READS`): one typed column per field (a u64
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
    ${snapshotHeadsSql({ prefix: 'v0260', table: 'os_v0_2_60_snapshots', records: sql`v0260_records`, sessions })},
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
