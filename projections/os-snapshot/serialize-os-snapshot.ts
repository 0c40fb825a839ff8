import type {
  BudgetExceededRecord,
  OsSnapshot,
  ProcessRecord,
  SignalRecord,
  SuspendRecord,
} from './os-snapshot.js';

/** Options of {@link serializeOsSnapshot}. */
export interface SerializeOsSnapshotOptions {
  /** Spaces per level, as `JSON.stringify`'s third argument (capped at 10); compact when absent or 0. */
  indent?: number;
}

/** The top-level keys of the snapshot's JSON, in the order the spec writes them. */
export const OS_SNAPSHOT_KEYS = [
  'last_suspend',
  'last_resumed_turn',
  'process_by_agent',
  'budget_exceeded',
  'signals',
  'page_out_count',
  'page_in_count',
  'tool_gated_count',
  'memory_written_count',
  'memory_queried_count',
  'memory_validation_failed_count',
  'memory_retrieval_result_count',
] as const satisfies readonly (keyof OsSnapshot)[];

/** The keys of each nested record, in the order the spec writes them. */
export const SUSPEND_RECORD_KEYS = ['turn', 'reason', 'pending_calls'] as const satisfies readonly (keyof SuspendRecord)[];
export const PROCESS_RECORD_KEYS = ['turn', 'agent_id', 'parent_session_id', 'state'] as const satisfies readonly (keyof ProcessRecord)[];
export const SIGNAL_RECORD_KEYS = ['turn', 'signal_id', 'disposition', 'queue_depth'] as const satisfies readonly (keyof SignalRecord)[];
export const BUDGET_EXCEEDED_RECORD_KEYS = ['turn', 'budget'] as const satisfies readonly (keyof BudgetExceededRecord)[];

/**
 * Writes a snapshot as the spec's JSON: keys in the spec's order at every level whatever the
 * order in which the object was built, every key present, `null` for an absent
 * `last_suspend` / `last_resumed_turn`, integers as JSON numbers. Properties the snapshot
 * type does not name are left out. Compact (like `JSON.stringify`) unless `indent` is given.
 *
 * @example
 * ```ts
 * serializeOsSnapshot(emptyOsSnapshot());
 * // '{"last_suspend":null,"last_resumed_turn":null,"process_by_agent":[],"budget_exceeded":[],
 * //   "signals":[],"page_out_count":0, … ,"memory_retrieval_result_count":0}'  (one line)
 * serializeOsSnapshot(snapshot, { indent: 2 }); // the golden fixtures' layout
 * ```
 */
export function serializeOsSnapshot(snapshot: OsSnapshot, options?: SerializeOsSnapshotOptions): string {
  return JSON.stringify(canonicalOsSnapshot(snapshot), null, options?.indent);
}

/**
 * A new snapshot holding the same values as `snapshot`, built field by field in the spec's
 * key order (so `JSON.stringify` and `Object.keys` follow it), without extra properties.
 */
export function canonicalOsSnapshot(snapshot: OsSnapshot): OsSnapshot {
  const suspend = snapshot.last_suspend ?? null;
  return {
    last_suspend:
      suspend === null
        ? null
        : { turn: suspend.turn, reason: suspend.reason, pending_calls: [...suspend.pending_calls] },
    last_resumed_turn: snapshot.last_resumed_turn ?? null,
    process_by_agent: snapshot.process_by_agent.map((p) => ({
      turn: p.turn,
      agent_id: p.agent_id,
      parent_session_id: p.parent_session_id,
      state: p.state,
    })),
    budget_exceeded: snapshot.budget_exceeded.map((b) => ({ turn: b.turn, budget: b.budget })),
    signals: snapshot.signals.map((s) => ({
      turn: s.turn,
      signal_id: s.signal_id,
      disposition: s.disposition,
      queue_depth: s.queue_depth,
    })),
    page_out_count: snapshot.page_out_count,
    page_in_count: snapshot.page_in_count,
    tool_gated_count: snapshot.tool_gated_count,
    memory_written_count: snapshot.memory_written_count,
    memory_queried_count: snapshot.memory_queried_count,
    memory_validation_failed_count: snapshot.memory_validation_failed_count,
    memory_retrieval_result_count: snapshot.memory_retrieval_result_count,
  };
}

/**
 * Reads a snapshot written by {@link serializeOsSnapshot} (compact or indented), strictly:
 * every key must be present, no other key may be, and every value must have its type
 * (`turn` and `queue_depth` u32; counters non-negative safe integers; `last_suspend` and
 * `last_resumed_turn` may be `null`). Throws an `Error` naming the offending path otherwise.
 * The result is built in the spec's key order.
 *
 * @example
 * ```ts
 * parseOsSnapshot(serializeOsSnapshot(snapshot)); // deep-equals snapshot
 * ```
 */
export function parseOsSnapshot(json: string): OsSnapshot {
  const value: unknown = JSON.parse(json);
  const top = record(value, '$', OS_SNAPSHOT_KEYS);
  return {
    last_suspend:
      top.last_suspend === null ? null : suspendRecord(top.last_suspend, '$.last_suspend'),
    last_resumed_turn:
      top.last_resumed_turn === null ? null : u32(top.last_resumed_turn, '$.last_resumed_turn'),
    process_by_agent: array(top.process_by_agent, '$.process_by_agent').map((item, i) => {
      const path = `$.process_by_agent[${i}]`;
      const p = record(item, path, PROCESS_RECORD_KEYS);
      return {
        turn: u32(p.turn, `${path}.turn`),
        agent_id: string(p.agent_id, `${path}.agent_id`),
        parent_session_id: p.parent_session_id === null ? null : string(p.parent_session_id, `${path}.parent_session_id`),
        state: string(p.state, `${path}.state`),
      };
    }),
    budget_exceeded: array(top.budget_exceeded, '$.budget_exceeded').map((item, i) => {
      const path = `$.budget_exceeded[${i}]`;
      const b = record(item, path, BUDGET_EXCEEDED_RECORD_KEYS);
      return { turn: u32(b.turn, `${path}.turn`), budget: string(b.budget, `${path}.budget`) };
    }),
    signals: array(top.signals, '$.signals').map((item, i) => {
      const path = `$.signals[${i}]`;
      const s = record(item, path, SIGNAL_RECORD_KEYS);
      return {
        turn: u32(s.turn, `${path}.turn`),
        signal_id: string(s.signal_id, `${path}.signal_id`),
        disposition: string(s.disposition, `${path}.disposition`),
        queue_depth: u32(s.queue_depth, `${path}.queue_depth`),
      };
    }),
    page_out_count: count(top.page_out_count, '$.page_out_count'),
    page_in_count: count(top.page_in_count, '$.page_in_count'),
    tool_gated_count: count(top.tool_gated_count, '$.tool_gated_count'),
    memory_written_count: count(top.memory_written_count, '$.memory_written_count'),
    memory_queried_count: count(top.memory_queried_count, '$.memory_queried_count'),
    memory_validation_failed_count: count(top.memory_validation_failed_count, '$.memory_validation_failed_count'),
    memory_retrieval_result_count: count(top.memory_retrieval_result_count, '$.memory_retrieval_result_count'),
  };
}

function suspendRecord(value: unknown, path: string): SuspendRecord {
  const s = record(value, path, SUSPEND_RECORD_KEYS);
  return {
    turn: u32(s.turn, `${path}.turn`),
    reason: string(s.reason, `${path}.reason`),
    pending_calls: array(s.pending_calls, `${path}.pending_calls`).map((call, i) =>
      string(call, `${path}.pending_calls[${i}]`),
    ),
  };
}

function record<K extends string>(value: unknown, path: string, keys: readonly K[]): Record<K, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(`${path}: expected an object`);
  }
  const object = value as Record<string, unknown>;
  for (const key of keys) {
    if (!Object.hasOwn(object, key)) {
      throw new Error(`${path}: missing key "${key}"`);
    }
  }
  const allowed: ReadonlySet<string> = new Set(keys);
  for (const key of Object.keys(object)) {
    if (!allowed.has(key)) {
      throw new Error(`${path}: unexpected key "${key}"`);
    }
  }
  return object as Record<K, unknown>;
}

function array(value: unknown, path: string): unknown[] {
  if (!Array.isArray(value)) {
    throw new Error(`${path}: expected an array`);
  }
  return value;
}

function string(value: unknown, path: string): string {
  if (typeof value !== 'string') {
    throw new Error(`${path}: expected a string`);
  }
  return value;
}

function u32(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 0xffff_ffff) {
    throw new Error(`${path}: expected an integer in 0..4294967295`);
  }
  return value;
}

function count(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new Error(`${path}: expected a non-negative integer`);
  }
  return value;
}
