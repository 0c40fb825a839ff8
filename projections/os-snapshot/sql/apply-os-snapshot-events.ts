import type { EventBatchSql } from '../../../src/projection-api.js';
import { type RawBuilder, sql } from 'kysely';
import { snapshotHeadsSql } from './snapshot-heads-sql.js';
import { processRowsSql } from './process-rows-sql.js';
import { OS_SNAPSHOT_READS } from '../os-snapshot-reads.js';

/**
 * The snapshot's fold as statements over a batch (see `Projection.foldStatements`), a few
 * set-based ones whatever its size. Each session's row (`snapshotHeadsSql`) gets its counters
 * added, and the last suspend or resume among the events replaces the stored one. Processes
 * are upserted by agent (`processRowsSql`), keeping the seq of first appearance. Signals and
 * budget events are appended. The events come read (`OS_SNAPSHOT_READS`): one typed column per field, missing
 * ones already defaulted.
 *
 * @example
 * ```ts
 * for (const statement of osSnapshotFoldStatements(eventBatchOf(osSnapshotProjection, sql`session_events`))) await statement.execute(trx);
 * ```
 */
export function osSnapshotFoldStatements({ events, sessions }: EventBatchSql): RawBuilder<unknown>[] {
  return [
    snapshotHeadsSql({ table: 'os_snapshots', records: events, sessions }),
    processRowsSql({ table: 'os_processes', records: events, reads: OS_SNAPSHOT_READS.agent_process_changed }),
    sql`
      INSERT INTO os_signals (session_id, seq, turn, signal_id, disposition, queue_depth)
      SELECT session_id, seq, turn, signal_id, disposition, queue_depth FROM ${events} AS e WHERE kind = 'signal_disposed'`,
    sql`
      INSERT INTO os_budget_exceeded (session_id, seq, turn, budget)
      SELECT session_id, seq, turn, budget FROM ${events} AS e WHERE kind = 'budget_exceeded'`,
  ];
}
