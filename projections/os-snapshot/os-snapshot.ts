/**
 * The OS audit snapshot of one session (`shared/spec/session-events.md`, section 3): a
 * read-only aggregate of a session's kernel OS events, the TypeScript twin of the seed's
 * `OsSnapshot` (`deepstrike_core/runtime/replay.rs`).
 *
 * Field names are exactly those of the snapshot's JSON. The records are `readonly`: a
 * snapshot is a value, and {@link foldOsSnapshot} shares unchanged parts between the snapshot
 * it starts from and the one it returns.
 *
 * @module
 */

/** The last `suspended` event of a session. */
export interface SuspendRecord {
  readonly turn: number;
  readonly reason: string;
  /** The event's `pending_calls` (`[]` when the event left them out). */
  readonly pending_calls: readonly string[];
}

/** The latest `agent_process_changed` event of one agent. */
export interface ProcessRecord {
  readonly turn: number;
  readonly agent_id: string;
  /** `null` when the event left it out (the SDKs' events do). */
  readonly parent_session_id: string | null;
  /** `"running"`, `"joined"`, `"failed"`, … free text; a missing state reads as `"running"`. */
  readonly state: string;
}

/** One `signal_disposed` event. */
export interface SignalRecord {
  readonly turn: number;
  readonly signal_id: string;
  /** `ignore`, `observe`, `queue`, `run`, `interrupt`, `interrupt_now`, `dropped`, … free text. */
  readonly disposition: string;
  readonly queue_depth: number;
}

/** One `budget_exceeded` event. */
export interface BudgetExceededRecord {
  readonly turn: number;
  readonly budget: string;
}

/**
 * The OS audit snapshot of one session, folded from its events in `seq` order.
 *
 * Serialized (see `serializeOsSnapshot`) with its keys in the order declared here.
 */
export interface OsSnapshot {
  /** The last `suspended` event's `{turn, reason, pending_calls}`; `null` if none. */
  readonly last_suspend: SuspendRecord | null;
  /** The last `resumed` event's turn; `null` if none. */
  readonly last_resumed_turn: number | null;
  /**
   * One record per distinct `agent_id`, in the order in which each agent first appeared;
   * each record holds the fields of that agent's latest `agent_process_changed` event.
   */
  readonly process_by_agent: readonly ProcessRecord[];
  /** Every `budget_exceeded` event, in log order (never deduplicated). */
  readonly budget_exceeded: readonly BudgetExceededRecord[];
  /** Every `signal_disposed` event, in log order (never deduplicated). */
  readonly signals: readonly SignalRecord[];
  /** The number of `page_out` events. */
  readonly page_out_count: number;
  /** The number of `page_in` events. */
  readonly page_in_count: number;
  /** The number of `tool_gated` events. */
  readonly tool_gated_count: number;
  /** The number of `memory_written` events. */
  readonly memory_written_count: number;
  /** The number of `memory_queried` events. */
  readonly memory_queried_count: number;
  /** The number of `memory_validation_failed` events. */
  readonly memory_validation_failed_count: number;
  /** The number of `memory_retrieval_result` events. */
  readonly memory_retrieval_result_count: number;
}

/**
 * The snapshot of a session without events: no suspend, no resume, no records, every
 * counter 0. Returns a new object each time.
 *
 * @example
 * ```ts
 * emptyOsSnapshot().last_suspend; // null
 * emptyOsSnapshot().signals; // []
 * ```
 */
export function emptyOsSnapshot(): OsSnapshot {
  return {
    last_suspend: null,
    last_resumed_turn: null,
    process_by_agent: [],
    budget_exceeded: [],
    signals: [],
    page_out_count: 0,
    page_in_count: 0,
    tool_gated_count: 0,
    memory_written_count: 0,
    memory_queried_count: 0,
    memory_validation_failed_count: 0,
    memory_retrieval_result_count: 0,
  };
}
