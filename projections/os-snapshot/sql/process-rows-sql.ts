import type { FieldRead } from '../../../src/projection-api.js';
import { type RawBuilder, sql } from 'kysely';

/** Where {@link processRowsSql} writes and reads. */
export interface ProcessRowsSql {
  /** The snapshot's processes table: one row per (session, agent), with `first_seq` and `last_seq`. */
  table: string;
  /** The batch's read events (a relation with `kind`, `session_id`, `seq` and the fields read). */
  records: RawBuilder<unknown>;
  /** What the snapshot reads of `agent_process_changed`: each field but `agent_id` is a column of `table`. */
  reads: Readonly<Record<string, FieldRead>>;
}

/**
 * The OS snapshot's processes folded from a batch, in one statement: upserted by
 * agent, each keeping the seq where it first appeared and holding its latest event's fields. The
 * seed's snapshot and v0.2.60's share this rule; their columns are the fields each reads.
 *
 * @example
 * ```ts
 * processRowsSql({ table: 'os_processes', records: events, reads: OS_SNAPSHOT_READS.agent_process_changed }); // one of the fold's statements
 * ```
 */
export function processRowsSql({ table, records, reads }: ProcessRowsSql): RawBuilder<unknown> {
  const columns = Object.keys(reads)
    .filter((field) => field !== 'agent_id')
    .map((field) => sql.id(field));
  return sql`
      INSERT INTO ${sql.table(table)} AS p (session_id, agent_id, first_seq, last_seq, ${sql.join(columns)}, updated_at)
      SELECT DISTINCT ON (b.session_id, b.agent_id)
        b.session_id, b.agent_id, min(b.seq) OVER agent, b.seq, ${sql.join(columns.map((column) => sql`b.${column}`))}, now()
      FROM ${records} AS b
      WHERE b.kind = 'agent_process_changed'
      WINDOW agent AS (PARTITION BY b.session_id, b.agent_id)
      ORDER BY b.session_id, b.agent_id, b.seq DESC
      ON CONFLICT (session_id, agent_id) DO UPDATE SET
        last_seq = excluded.last_seq,
        ${sql.join(columns.map((column) => sql`${column} = excluded.${column}`))},
        updated_at = excluded.updated_at`;
}
