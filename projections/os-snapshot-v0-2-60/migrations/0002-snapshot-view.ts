import { type Kysely, sql } from 'kysely';

/**
 * A session's snapshot as the Rust fold's JSON, built from its `os_v0_2_60_snapshots` row `s`
 * and its rows of the list tables: the column `snapshot` of `os_snapshot_v0_2_60_json`. Since
 * `0004-snapshot-json-planned-once`, also the body of the function that view calls.
 */
export const osSnapshotV0260JsonSql = sql`
  json_build_object(
    'last_suspend', CASE WHEN s.last_suspend_seq IS NULL THEN NULL ELSE json_build_object(
      'turn', s.last_suspend_turn,
      'reason', s.last_suspend_reason,
      'pending_calls', to_json(s.last_suspend_pending_calls)) END,
    'last_resumed_turn', s.last_resumed_turn,
    'process_by_agent', coalesce((
      SELECT json_agg(json_build_object(
               'turn', p.turn, 'agent_id', p.agent_id,
               'parent_session_id', p.parent_session_id, 'state', p.state) ORDER BY p.first_seq)
      FROM os_v0_2_60_processes p WHERE p.session_id = s.session_id), '[]'::json),
    'budget_exceeded', coalesce((
      SELECT json_agg(json_build_object(
               'turn', b.turn, 'operation_id', b.operation_id,
               'reservation_id', b.reservation_id, 'budget', b.budget) ORDER BY b.seq)
      FROM os_v0_2_60_budget_exceeded b WHERE b.session_id = s.session_id), '[]'::json),
    'budget_usage_reported', coalesce((
      SELECT json_agg(json_build_object(
               'turn', u.turn, 'operation_id', u.operation_id, 'reservation_id', u.reservation_id,
               'tokens', u.tokens, 'subagents', u.subagents, 'rounds', u.rounds) ORDER BY u.seq)
      FROM os_v0_2_60_budget_usage u WHERE u.session_id = s.session_id), '[]'::json),
    'cancellations', coalesce((
      SELECT json_agg(json_build_object(
               'turn', c.turn, 'operation_id', c.operation_id,
               'reason', c.reason, 'pending_call_ids', to_json(c.pending_call_ids)) ORDER BY c.seq)
      FROM os_v0_2_60_cancellations c WHERE c.session_id = s.session_id), '[]'::json),
    'signals', coalesce((
      SELECT json_agg(json_build_object(
               'turn', g.turn, 'operation_id', g.operation_id, 'delivery_id', g.delivery_id,
               'attempt', g.attempt, 'signal_id', g.signal_id,
               'disposition', g.disposition, 'queue_depth', g.queue_depth) ORDER BY g.seq)
      FROM os_v0_2_60_signals g WHERE g.session_id = s.session_id), '[]'::json),
    'page_out_count', s.page_out_count,
    'page_in_count', s.page_in_count,
    'tool_gated_count', s.tool_gated_count,
    'memory_written_count', s.memory_written_count,
    'memory_queried_count', s.memory_queried_count,
    'memory_validation_failed_count', s.memory_validation_failed_count,
    'memory_retrieval_result_count', s.memory_retrieval_result_count
  )`;

/**
 * `os_snapshot_v0_2_60_json(session_id, snapshot)`: each session's snapshot as the Rust fold's
 * JSON, keys in its order (`osSnapshotV0260Json` builds the same). `json`, not `jsonb`, keeps the
 * keys in the order they are built; a `numeric` `tokens` is written as its digits.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE VIEW os_snapshot_v0_2_60_json AS SELECT s.session_id, ${osSnapshotV0260JsonSql} AS snapshot FROM os_v0_2_60_snapshots s`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP VIEW os_snapshot_v0_2_60_json`.execute(db);
}
