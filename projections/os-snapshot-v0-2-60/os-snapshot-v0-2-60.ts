/**
 * The OS audit snapshot of one session as the runtime folds it at v0.2.60: the TypeScript twin
 * of the Rust core's `OsSnapshot` (`deepstrike_core/runtime/replay.rs` at v0.2.60,
 * `shared/deepstrike-sdk/replay-v0.2.60.rs.txt`). Beside the seed's snapshot it keeps two more
 * lists (`budget_usage_reported`, `cancellations`), richer `budget_exceeded` records, and
 * signals from `signal_delivery_disposed` (the seed's `signal_disposed` is no longer read).
 *
 * Field names are those of the Rust fold's JSON. The suspend and process records did not change
 * at v0.2.60: they are the seed's.
 *
 * @module
 */
import { type OsSnapshotCounts, osSnapshotCounts, type ProcessRecord, type SuspendRecord } from '../os-snapshot/index.js';

export type { ProcessRecord, SuspendRecord };

/** One `signal_delivery_disposed` event (Rust: `SignalDeliveryDisposedRecord`). */
export interface SignalDeliveryDisposedRecord {
  readonly turn: number;
  readonly operation_id: string;
  readonly delivery_id: string;
  readonly attempt: number;
  readonly signal_id: string;
  /** `ignore`, `observe`, `queue`, `run`, `interrupt`, … free text. */
  readonly disposition: string;
  readonly queue_depth: number;
}

/** One `budget_exceeded` event (Rust: `BudgetExceededRecord`). */
export interface BudgetExceededRecord {
  readonly turn: number;
  readonly operation_id: string;
  /** `null` when the event left it out: the Rust record is an `Option` serialized without a skip. */
  readonly reservation_id: string | null;
  readonly budget: string;
}

/** One `budget_usage_reported` event (Rust: `BudgetUsageRecord`). */
export interface BudgetUsageRecord {
  readonly turn: number;
  readonly operation_id: string;
  readonly reservation_id: string;
  /** A u64: a `bigint` above 2^53, so that it stays exact. */
  readonly tokens: number | bigint;
  readonly subagents: number;
  readonly rounds: number;
}

/** One `operation_cancelled` event (Rust: `CancellationRecord`). */
export interface CancellationRecord {
  readonly turn: number;
  readonly operation_id: string;
  /** `user`, `deadline`, `lease_lost`, `host_shutdown` (the runtime's `CancellationReason`), … free text. */
  readonly reason: string;
  /** `[]` when the event left them out. */
  readonly pending_call_ids: readonly string[];
}

/**
 * The v0.2.60 OS audit snapshot of one session, folded from its events in `seq` order. Its JSON
 * has the keys in the order declared here, the seed's seven counters last (see `osSnapshotV0260Json`).
 */
export interface OsSnapshotV0260 extends OsSnapshotCounts {
  /** The last `suspended` event's `{turn, reason, pending_calls}`; `null` if none. */
  readonly last_suspend: SuspendRecord | null;
  /** The last `resumed` event's turn; `null` if none. */
  readonly last_resumed_turn: number | null;
  /** One record per `agent_id`, where it first appeared, holding its latest event's fields. */
  readonly process_by_agent: readonly ProcessRecord[];
  /** Every `budget_exceeded` event, in log order. */
  readonly budget_exceeded: readonly BudgetExceededRecord[];
  /** Every `budget_usage_reported` event, in log order. */
  readonly budget_usage_reported: readonly BudgetUsageRecord[];
  /** Every `operation_cancelled` event, in log order. */
  readonly cancellations: readonly CancellationRecord[];
  /** Every `signal_delivery_disposed` event, in log order. */
  readonly signals: readonly SignalDeliveryDisposedRecord[];
}

/**
 * The snapshot of a session without events: nulls, empty lists, counters 0. A new object each time.
 *
 * @example
 * ```ts
 * emptyOsSnapshotV0260().cancellations; // []
 * ```
 */
export function emptyOsSnapshotV0260(): OsSnapshotV0260 {
  return {
    last_suspend: null,
    last_resumed_turn: null,
    process_by_agent: [],
    budget_exceeded: [],
    budget_usage_reported: [],
    cancellations: [],
    signals: [],
    ...osSnapshotCounts(),
  };
}
