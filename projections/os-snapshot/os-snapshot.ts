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
import { OS_SNAPSHOT_COUNTERS } from './os-snapshot-reads.js';

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

/** A counter of the snapshot: the number of events of its kind (`OS_SNAPSHOT_COUNTERS`). */
export type OsSnapshotCounter = keyof typeof OS_SNAPSHOT_COUNTERS;

/** The snapshot's counters, in the spec's order. */
export const OS_SNAPSHOT_COUNTER_NAMES = Object.keys(OS_SNAPSHOT_COUNTERS) as OsSnapshotCounter[];

/** The value of each counter. */
export type OsSnapshotCounts = { readonly [Counter in OsSnapshotCounter]: number };

/**
 * The OS audit snapshot of one session, folded from its events in `seq` order.
 *
 * Its JSON (`canonicalOsSnapshot`) has the keys in the order declared here, the counters last.
 */
export interface OsSnapshot extends OsSnapshotCounts {
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
    ...osSnapshotCounts(),
  };
}

/**
 * The counters of `snapshot` (every one 0 without it), in the spec's order, and nothing else.
 *
 * @example
 * ```ts
 * osSnapshotCounts().page_out_count; // 0
 * Object.keys(osSnapshotCounts(snapshot)); // OS_SNAPSHOT_COUNTER_NAMES
 * ```
 */
export function osSnapshotCounts(snapshot?: OsSnapshotCounts): OsSnapshotCounts {
  return Object.fromEntries(OS_SNAPSHOT_COUNTER_NAMES.map((counter) => [counter, snapshot?.[counter] ?? 0])) as Record<OsSnapshotCounter, number>;
}
