import { type Kysely, sql } from 'kysely';

/**
 * Dashboards of what v0.2.60 added, each answering one question with stable column names:
 *
 * - `os_v0_2_60_operations`: one row per (session, operation) met in the four lists: the usage
 *   it reported (summed), the budgets it exceeded, its signals, and its last cancellation.
 * - `os_v0_2_60_signal_dispositions`: signal deliveries by disposition, for the whole fleet.
 *
 * Plain views: always current. Filtered by `session_id`, each lookup is a range of a primary key.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE VIEW os_v0_2_60_operations AS
    SELECT o.session_id, o.operation_id,
      u.usage_reports, u.tokens, u.subagents, u.rounds,
      b.budgets_exceeded, g.signals,
      c.reason AS cancelled_reason, c.turn AS cancelled_turn
    FROM (
      SELECT session_id, operation_id FROM os_v0_2_60_budget_usage
      UNION SELECT session_id, operation_id FROM os_v0_2_60_budget_exceeded
      UNION SELECT session_id, operation_id FROM os_v0_2_60_cancellations
      UNION SELECT session_id, operation_id FROM os_v0_2_60_signals
    ) AS o
    CROSS JOIN LATERAL (
      SELECT count(*) AS usage_reports, coalesce(sum(tokens), 0) AS tokens,
        coalesce(sum(subagents), 0) AS subagents, coalesce(sum(rounds), 0) AS rounds
      FROM os_v0_2_60_budget_usage WHERE session_id = o.session_id AND operation_id = o.operation_id) AS u
    CROSS JOIN LATERAL (
      SELECT count(*) AS budgets_exceeded FROM os_v0_2_60_budget_exceeded
      WHERE session_id = o.session_id AND operation_id = o.operation_id) AS b
    CROSS JOIN LATERAL (
      SELECT count(*) AS signals FROM os_v0_2_60_signals
      WHERE session_id = o.session_id AND operation_id = o.operation_id) AS g
    LEFT JOIN LATERAL (
      SELECT reason, turn FROM os_v0_2_60_cancellations
      WHERE session_id = o.session_id AND operation_id = o.operation_id ORDER BY seq DESC LIMIT 1) AS c ON true`.execute(db);

  await sql`
    CREATE VIEW os_v0_2_60_signal_dispositions AS
    SELECT disposition, count(*) AS signals, count(DISTINCT session_id) AS sessions,
      max(attempt) AS max_attempt, max(queue_depth) AS max_queue_depth
    FROM os_v0_2_60_signals
    GROUP BY disposition`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP VIEW os_v0_2_60_signal_dispositions`.execute(db);
  await sql`DROP VIEW os_v0_2_60_operations`.execute(db);
}
