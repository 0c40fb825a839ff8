import { type RawBuilder, sql } from 'kysely';
import { OS_SNAPSHOT_COUNTERS } from '../os-snapshot-reads.js';

/** Where {@link snapshotHeadsSql} writes and reads. */
export interface SnapshotHeadsSql {
  /** The snapshot's heads table: one row per session, with the columns of `os_snapshots`. */
  table: string;
  /** The batch's read events (a relation with `kind`, `seq`, `recorded_at`, `turn`, `reason`, `pending_calls`). */
  records: RawBuilder<unknown>;
  /** The batch's sessions (`session_id`, `last_seq` and a column per counter). */
  sessions: RawBuilder<unknown>;
}

/**
 * The OS snapshot's per-session row folded from a batch, in one statement: its
 * counters (`OS_SNAPSHOT_COUNTERS`) added, the batch's last `suspended` and `resumed` replacing
 * the stored ones, `last_seq` moved. The seed's snapshot and v0.2.60's share these rules: each
 * keeps them in its own table.
 *
 * @example
 * ```ts
 * snapshotHeadsSql({ table: 'os_snapshots', records: events, sessions }); // one of the fold's statements
 * ```
 */
export function snapshotHeadsSql({ table, records, sessions }: SnapshotHeadsSql): RawBuilder<unknown> {
  const counters = Object.keys(OS_SNAPSHOT_COUNTERS).map((counter) => sql.id(counter));
  const keptUnlessNew = (seq: string, columns: readonly string[]) =>
    columns.map((column) => sql`${sql.id(column)} = CASE WHEN excluded.${sql.id(seq)} IS NULL THEN s.${sql.id(column)} ELSE excluded.${sql.id(column)} END`);
  // Subqueries, not common table expressions: Citus runs the statement on each shard so.
  return sql`
      INSERT INTO ${sql.table(table)} AS s (
        session_id, last_seq, last_suspend_seq, last_suspend_turn, last_suspend_reason, last_suspend_pending_calls,
        last_suspended_at, last_resumed_seq, last_resumed_turn, ${sql.join(counters)}, updated_at)
      SELECT a.session_id, a.last_seq, su.seq, su.turn, su.reason, su.pending_calls, su.recorded_at, re.seq, re.turn,
        ${sql.join(counters.map((counter) => sql`a.${counter}`))}, now()
      FROM ${sessions} AS a
      LEFT JOIN (
        SELECT DISTINCT ON (session_id) session_id, seq, recorded_at, turn, reason, pending_calls FROM ${records} AS r
        WHERE kind = 'suspended' ORDER BY session_id, seq DESC
      ) AS su ON su.session_id = a.session_id
      LEFT JOIN (
        SELECT DISTINCT ON (session_id) session_id, seq, turn FROM ${records} AS r
        WHERE kind = 'resumed' ORDER BY session_id, seq DESC
      ) AS re ON re.session_id = a.session_id
      ON CONFLICT (session_id) DO UPDATE SET
        last_seq = excluded.last_seq,
        last_suspend_seq = coalesce(excluded.last_suspend_seq, s.last_suspend_seq),
        ${sql.join(keptUnlessNew('last_suspend_seq', ['last_suspend_turn', 'last_suspend_reason', 'last_suspend_pending_calls', 'last_suspended_at']))},
        last_resumed_seq = coalesce(excluded.last_resumed_seq, s.last_resumed_seq),
        ${sql.join(keptUnlessNew('last_resumed_seq', ['last_resumed_turn']))},
        ${sql.join(counters.map((counter) => sql`${counter} = s.${counter} + excluded.${counter}`))},
        updated_at = excluded.updated_at`;
}
