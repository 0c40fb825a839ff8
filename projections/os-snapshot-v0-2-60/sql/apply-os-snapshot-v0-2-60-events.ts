import { type RawBuilder, sql } from 'kysely';
import type { EventBatchSql } from '../../../src/projector/projection.js';
import { snapshotHeadsSql } from '../../os-snapshot/sql/snapshot-heads-sql.js';
import { processRowsSql } from '../../os-snapshot/sql/process-rows-sql.js';
import { OS_SNAPSHOT_V0_2_60_READS } from '../os-snapshot-v0-2-60-reads.js';

/**
 * The v0.2.60 snapshot's fold as common table expressions over a batch (see
 * `Projection.foldSql`), a few set-based statements whatever its size: each session's row and
 * its processes as the seed's (`snapshotHeadsSql`, `processRowsSql`: counters added, the last
 * suspend / resume replacing the stored one, processes upserted by agent), and a row per event
 * in each of the four lists. The events come read (`OS_SNAPSHOT_V0_2_60_READS`): one typed
 * column per field (a u64 `numeric`), missing ones already defaulted.
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
    ${processRowsSql({ name: 'v0260_process_rows', table: 'os_v0_2_60_processes', records: sql`v0260_records`, reads: OS_SNAPSHOT_V0_2_60_READS.agent_process_changed })},
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
