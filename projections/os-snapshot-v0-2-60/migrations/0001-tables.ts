import { type Kysely, sql } from 'kysely';

/** The tables, in the order `down` drops them (the session heads last). */
const TABLES = [
  'os_v0_2_60_signals',
  'os_v0_2_60_cancellations',
  'os_v0_2_60_budget_usage',
  'os_v0_2_60_budget_exceeded',
  'os_v0_2_60_processes',
  'os_v0_2_60_snapshots',
];

/**
 * The v0.2.60 snapshot's tables, each keyed by `session_id` first:
 *
 * - `os_v0_2_60_snapshots`: the session heads (`last_seq`: the last event folded), one row per
 *   session: the counters, the last suspend and resume (with their seqs: which came last).
 * - `os_v0_2_60_processes`: one row per (session, agent), upserted; `first_seq` keeps the
 *   snapshot's order, the rest the latest event's fields, with the ones the snapshot does not
 *   read (`parent_task_id`, `role`, …) when they had their usual type.
 * - `os_v0_2_60_budget_exceeded`, `os_v0_2_60_budget_usage`, `os_v0_2_60_cancellations`,
 *   `os_v0_2_60_signals`: a row per event, by seq. `tokens` is a u64: `numeric`, as bigint
 *   stops at 2^63 - 1.
 *
 * Free text stays text (budgets, dispositions, reasons): the runtime writes new values.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE os_v0_2_60_snapshots (
      session_id text PRIMARY KEY,
      last_seq bigint NOT NULL,
      last_suspend_seq bigint,
      last_suspend_turn bigint,
      last_suspend_reason text,
      last_suspend_pending_calls text[],
      last_suspended_at timestamptz,
      last_resumed_seq bigint,
      last_resumed_turn bigint,
      page_out_count bigint NOT NULL DEFAULT 0,
      page_in_count bigint NOT NULL DEFAULT 0,
      tool_gated_count bigint NOT NULL DEFAULT 0,
      memory_written_count bigint NOT NULL DEFAULT 0,
      memory_queried_count bigint NOT NULL DEFAULT 0,
      memory_validation_failed_count bigint NOT NULL DEFAULT 0,
      memory_retrieval_result_count bigint NOT NULL DEFAULT 0,
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((last_suspend_seq IS NULL) = (last_suspend_turn IS NULL))
    )`.execute(db);

  await sql`
    CREATE TABLE os_v0_2_60_processes (
      session_id text NOT NULL,
      agent_id text NOT NULL,
      first_seq bigint NOT NULL,
      last_seq bigint NOT NULL,
      turn bigint NOT NULL,
      parent_session_id text,
      state text NOT NULL,
      parent_task_id text,
      role text,
      isolation text,
      context_inheritance text,
      result_termination text,
      permitted_capability_ids text[],
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (session_id, agent_id)
    )`.execute(db);
  await sql`CREATE INDEX os_v0_2_60_processes_state_idx ON os_v0_2_60_processes (state, session_id)`.execute(db);

  await sql`
    CREATE TABLE os_v0_2_60_budget_exceeded (
      session_id text NOT NULL,
      seq bigint NOT NULL,
      turn bigint NOT NULL,
      operation_id text NOT NULL,
      reservation_id text,
      budget text NOT NULL,
      PRIMARY KEY (session_id, seq)
    )`.execute(db);

  await sql`
    CREATE TABLE os_v0_2_60_budget_usage (
      session_id text NOT NULL,
      seq bigint NOT NULL,
      turn bigint NOT NULL,
      operation_id text NOT NULL,
      reservation_id text NOT NULL,
      tokens numeric NOT NULL,
      subagents bigint NOT NULL,
      rounds bigint NOT NULL,
      PRIMARY KEY (session_id, seq)
    )`.execute(db);

  await sql`
    CREATE TABLE os_v0_2_60_cancellations (
      session_id text NOT NULL,
      seq bigint NOT NULL,
      turn bigint NOT NULL,
      operation_id text NOT NULL,
      reason text NOT NULL,
      pending_call_ids text[] NOT NULL,
      PRIMARY KEY (session_id, seq)
    )`.execute(db);

  await sql`
    CREATE TABLE os_v0_2_60_signals (
      session_id text NOT NULL,
      seq bigint NOT NULL,
      turn bigint NOT NULL,
      operation_id text NOT NULL,
      delivery_id text NOT NULL,
      attempt bigint NOT NULL,
      signal_id text NOT NULL,
      disposition text NOT NULL,
      queue_depth bigint NOT NULL,
      PRIMARY KEY (session_id, seq)
    )`.execute(db);
  await sql`CREATE INDEX os_v0_2_60_signals_disposition_idx ON os_v0_2_60_signals (disposition, session_id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of TABLES) await sql`DROP TABLE ${sql.table(table)}`.execute(db);
}
