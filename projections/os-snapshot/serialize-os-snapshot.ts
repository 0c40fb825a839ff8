import {
  type BudgetExceededRecord,
  OS_SNAPSHOT_COUNTER_NAMES,
  type OsSnapshot,
  osSnapshotCounts,
  type ProcessRecord,
  type SignalRecord,
  type SuspendRecord,
} from './os-snapshot.js';

/** The top-level keys of the snapshot's JSON, in the order the spec writes them. */
export const OS_SNAPSHOT_KEYS: readonly (keyof OsSnapshot)[] = [
  'last_suspend',
  'last_resumed_turn',
  'process_by_agent',
  'budget_exceeded',
  'signals',
  ...OS_SNAPSHOT_COUNTER_NAMES,
];

/** The keys of each nested record, in the order the spec writes them. */
export const SUSPEND_RECORD_KEYS = ['turn', 'reason', 'pending_calls'] as const satisfies readonly (keyof SuspendRecord)[];
export const PROCESS_RECORD_KEYS = ['turn', 'agent_id', 'parent_session_id', 'state'] as const satisfies readonly (keyof ProcessRecord)[];
export const SIGNAL_RECORD_KEYS = ['turn', 'signal_id', 'disposition', 'queue_depth'] as const satisfies readonly (keyof SignalRecord)[];
export const BUDGET_EXCEEDED_RECORD_KEYS = ['turn', 'budget'] as const satisfies readonly (keyof BudgetExceededRecord)[];

/**
 * The snapshot as the spec's JSON: a new snapshot holding the same values as `snapshot`. It is
 * built in the spec's key order at every level, whatever the order `snapshot` was built in, so
 * `JSON.stringify`, `stringifyJson` and `Object.keys` follow it. Every key is present, `null`
 * for an absent `last_suspend` or `last_resumed_turn`, and nothing else. It is the projection's
 * `toJson`, and what the view `os_snapshot_json` holds.
 *
 * @example
 * ```ts
 * JSON.stringify(canonicalOsSnapshot(emptyOsSnapshot()));
 * // '{"last_suspend":null,"last_resumed_turn":null,"process_by_agent":[],"budget_exceeded":[],
 * //   "signals":[],"page_out_count":0, … ,"memory_retrieval_result_count":0}'  (one line)
 * JSON.stringify(canonicalOsSnapshot(snapshot), null, 2); // the golden fixtures' layout
 * ```
 */
export function canonicalOsSnapshot(snapshot: OsSnapshot): OsSnapshot {
  const suspend = snapshot.last_suspend ?? null;
  return {
    last_suspend: suspend === null ? null : { ...pick(suspend, SUSPEND_RECORD_KEYS), pending_calls: [...suspend.pending_calls] },
    last_resumed_turn: snapshot.last_resumed_turn ?? null,
    process_by_agent: snapshot.process_by_agent.map((process) => pick(process, PROCESS_RECORD_KEYS)),
    budget_exceeded: snapshot.budget_exceeded.map((budget) => pick(budget, BUDGET_EXCEEDED_RECORD_KEYS)),
    signals: snapshot.signals.map((signal) => pick(signal, SIGNAL_RECORD_KEYS)),
    ...osSnapshotCounts(snapshot),
  };
}

/** A new record of `record`'s `keys`, in their order. */
function pick<T, K extends keyof T>(record: T, keys: readonly K[]): Pick<T, K> {
  return Object.fromEntries(keys.map((key) => [key, record[key]])) as Pick<T, K>;
}
