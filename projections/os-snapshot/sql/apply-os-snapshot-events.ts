import { type RawBuilder, sql } from 'kysely';
import type { EventBatchSql } from '../../../src/projector/projection.js';
import { snapshotHeadsSql } from './snapshot-heads-sql.js';
import { processRowsSql } from './process-rows-sql.js';
import { OS_SNAPSHOT_READS } from '../os-snapshot-reads.js';

/**
 * The snapshot's fold as common table expressions over a batch (see `Projection.foldSql`), in
 * a few set-based statements whatever its size: each session's row (`snapshotHeadsSql`:
 * counters added, the last suspend / resume among the events replacing the stored one),
 * processes upserted by agent (`processRowsSql`: keeping the seq of first appearance), signals
 * and budget events appended. The events come read (`OS_SNAPSHOT_READS`): one typed column per
 * field, missing ones already defaulted.
 *
 * @example
 * ```ts
 * await sql`WITH ${osSnapshotFoldSql(eventBatchOf(osSnapshotProjection, sql`session_events`))} SELECT`.execute(trx);
 * ```
 */
export function osSnapshotFoldSql({ events, sessions }: EventBatchSql): RawBuilder<unknown> {
  return sql`
    os_records AS MATERIALIZED (SELECT * FROM ${events} AS source),
    ${snapshotHeadsSql({ prefix: 'os', table: 'os_snapshots', records: sql`os_records`, sessions })},
    ${processRowsSql({ name: 'os_process_rows', table: 'os_processes', records: sql`os_records`, reads: OS_SNAPSHOT_READS.agent_process_changed })},
    os_signal_rows AS (
      INSERT INTO os_signals (session_id, seq, turn, signal_id, disposition, queue_depth)
      SELECT session_id, seq, turn, signal_id, disposition, queue_depth FROM os_records WHERE kind = 'signal_disposed'
      RETURNING 1
    ),
    os_budget_rows AS (
      INSERT INTO os_budget_exceeded (session_id, seq, turn, budget)
      SELECT session_id, seq, turn, budget FROM os_records WHERE kind = 'budget_exceeded'
      RETURNING 1
    )`;
}
