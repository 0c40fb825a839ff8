import type { EventBatchSql } from '../../../src/projection-api.js';
import { type RawBuilder, sql } from 'kysely';
import { snapshotHeadsSql } from '../../os-snapshot/index.js';
import { processRowsSql } from '../../os-snapshot/index.js';
import { OS_SNAPSHOT_V0_2_60_READS } from '../os-snapshot-v0-2-60-reads.js';

/**
 * The v0.2.60 snapshot's fold as statements over a batch (see `Projection.foldStatements`), a
 * few set-based ones whatever its size. Each session's row and its processes are the seed's
 * (`snapshotHeadsSql`, `processRowsSql`): counters added, the last suspend or resume replacing
 * the stored one, processes upserted by agent. Each of the four lists gets a row per event.
 * The events come read (`OS_SNAPSHOT_V0_2_60_READS`): one typed column per field (a u64
 * `numeric`), missing ones already defaulted.
 *
 * @example
 * ```ts
 * for (const statement of osSnapshotV0260FoldStatements(eventBatchOf(osSnapshotV0260Projection, sql`session_events`))) await statement.execute(trx);
 * ```
 */
export function osSnapshotV0260FoldStatements({ events, sessions }: EventBatchSql): RawBuilder<unknown>[] {
  return [
    snapshotHeadsSql({ table: 'os_v0_2_60_snapshots', records: events, sessions }),
    processRowsSql({ table: 'os_v0_2_60_processes', records: events, reads: OS_SNAPSHOT_V0_2_60_READS.agent_process_changed }),
    sql`
      INSERT INTO os_v0_2_60_budget_exceeded (session_id, seq, turn, operation_id, reservation_id, budget)
      SELECT session_id, seq, turn, operation_id, reservation_id, budget FROM ${events} AS e WHERE kind = 'budget_exceeded'`,
    sql`
      INSERT INTO os_v0_2_60_budget_usage (session_id, seq, turn, operation_id, reservation_id, tokens, subagents, rounds)
      SELECT session_id, seq, turn, operation_id, reservation_id, tokens, subagents, rounds FROM ${events} AS e WHERE kind = 'budget_usage_reported'`,
    sql`
      INSERT INTO os_v0_2_60_cancellations (session_id, seq, turn, operation_id, reason, pending_call_ids)
      SELECT session_id, seq, turn, operation_id, reason, pending_call_ids FROM ${events} AS e WHERE kind = 'operation_cancelled'`,
    sql`
      INSERT INTO os_v0_2_60_signals (session_id, seq, turn, operation_id, delivery_id, attempt, signal_id, disposition, queue_depth)
      SELECT session_id, seq, turn, operation_id, delivery_id, attempt, signal_id, disposition, queue_depth
      FROM ${events} AS e WHERE kind = 'signal_delivery_disposed'`,
  ];
}
