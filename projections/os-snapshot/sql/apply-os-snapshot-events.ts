import { type RawBuilder, sql } from 'kysely';
import type { EventBatchSql } from '../../../src/projector/projection.js';
import { snapshotHeadsSql } from './snapshot-heads-sql.js';

/**
 * The snapshot's fold as common table expressions over a batch (see `Projection.foldSql`), in
 * a few set-based statements whatever its size: each session's row (`snapshotHeadsSql`:
 * counters added, the last suspend / resume among the events replacing the stored one),
 * processes upserted by agent (keeping the seq of first appearance), signals and budget events
 * appended. The events come read (`OS_SNAPSHOT_READS`): one typed column per field, missing
 * ones already defaulted.
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
    os_process_rows AS (
      INSERT INTO os_processes AS p (
        session_id, agent_id, first_seq, last_seq, turn, parent_session_id, state, role, isolation,
        context_inheritance, result_termination, permitted_capability_ids, updated_at)
      SELECT DISTINCT ON (b.session_id, b.agent_id)
        b.session_id, b.agent_id, min(b.seq) OVER agent, b.seq, b.turn, b.parent_session_id, b.state, b.role,
        b.isolation, b.context_inheritance, b.result_termination, b.permitted_capability_ids, now()
      FROM os_records b
      WHERE b.kind = 'agent_process_changed'
      WINDOW agent AS (PARTITION BY b.session_id, b.agent_id)
      ORDER BY b.session_id, b.agent_id, b.seq DESC
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
