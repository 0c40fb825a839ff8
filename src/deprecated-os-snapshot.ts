/**
 * The OS snapshot's API from before projections were plug-ins, kept for the code that uses it:
 * each is the general API applied to `osSnapshotProjection`, which new code calls itself.
 *
 * @module
 */
import type { Kysely } from 'kysely';
import { osSnapshotProjection } from '../projections/os-snapshot/os-snapshot-projection.js';
import {
  BUDGET_EXCEEDED_RECORD_KEYS,
  canonicalOsSnapshot,
  OS_SNAPSHOT_COUNTER_NAMES,
  OS_SNAPSHOT_KEYS,
  type OsSnapshot,
  type OsSnapshotCounter,
  type OsSnapshotCounts,
  PROCESS_RECORD_KEYS,
  SIGNAL_RECORD_KEYS,
  SUSPEND_RECORD_KEYS,
  type SuspendRecord,
} from '../projections/os-snapshot/index.js';
import type { DB } from './db/schema.js';
import { stringifyJson } from './json/stringify-json.js';
import { foldStoredLog, type FoldLogOptions, readStoredSnapshot, type SessionStop } from './projector/stored-snapshot.js';
import { type VerifyReport, type VerifySelection, verifyProjection } from './projector/verify-projection.js';
import type { EventStore } from './store/event-store.js';

/**
 * The name of the OS snapshot's checkpoint, lease, stopped sessions and set-aside events.
 *
 * @deprecated `osSnapshotProjection.name`.
 */
export const OS_SNAPSHOT_PROJECTION = osSnapshotProjection.name;

/**
 * A snapshot, the seq of the last event folded into it, and where it stopped, if it did.
 *
 * @deprecated what `readStoredSnapshot` and `foldStoredLog` give for `osSnapshotProjection`
 * (`StoredSnapshot`, `FoldedLog`).
 */
export interface FoldedSnapshot {
  snapshot: OsSnapshot;
  lastSeq: number;
  stopped: SessionStop | null;
}

/**
 * A session's OS snapshot as the SQL tables hold it (through the view `os_snapshot_json`), or
 * `undefined` when the projector has not reached the session.
 *
 * @deprecated `readStoredSnapshot(db, osSnapshotProjection, sessionId)`, whose `json` is the snapshot.
 */
export async function readSqlOsSnapshot(db: Kysely<DB>, sessionId: string): Promise<FoldedSnapshot | undefined> {
  const stored = await readStoredSnapshot(db, osSnapshotProjection, sessionId);
  if (stored === undefined) return undefined;
  return { snapshot: parseOsSnapshot(stringifyJson(stored.json)), lastSeq: stored.lastSeq, stopped: stored.stopped };
}

/**
 * The in-memory OS snapshot of a session's stored log: the reference its SQL snapshot must equal.
 *
 * @deprecated `foldStoredLog(store, osSnapshotProjection, sessionId)`, whose `state.snapshot` is the snapshot.
 */
export async function foldStoredOsSnapshot(store: EventStore, sessionId: string, options: FoldLogOptions = {}): Promise<FoldedSnapshot> {
  const { state, lastSeq, stopped } = await foldStoredLog(store, osSnapshotProjection, sessionId, options);
  return { snapshot: state.snapshot, lastSeq, stopped };
}

/**
 * Proves the OS snapshot's SQL tables right.
 *
 * @deprecated `verifyProjection(db, osSnapshotProjection, selection, onProgress)`.
 */
export function verifyOsSnapshots(db: Kysely<DB>, selection: VerifySelection, onProgress?: (checked: number, total: number) => void): Promise<VerifyReport> {
  return verifyProjection(db, osSnapshotProjection, selection, onProgress);
}

/**
 * Options of {@link serializeOsSnapshot}.
 *
 * @deprecated with it.
 */
export interface SerializeOsSnapshotOptions {
  /** Spaces per level, as `JSON.stringify`'s third argument (capped at 10); compact when absent or 0. */
  indent?: number;
}

/**
 * Writes a snapshot as the spec's JSON, compact unless `indent` is given.
 *
 * @deprecated `JSON.stringify(canonicalOsSnapshot(snapshot), null, indent)`, or
 * `stringifyJson(osSnapshotProjection.toJson(state))` as the projector writes it.
 */
export function serializeOsSnapshot(snapshot: OsSnapshot, options?: SerializeOsSnapshotOptions): string {
  return JSON.stringify(canonicalOsSnapshot(snapshot), null, options?.indent);
}

/**
 * Reads a snapshot written by {@link serializeOsSnapshot} (compact or indented), strictly.
 * Every key must be present, no other key may be, and every value must have its type: `turn`
 * and `queue_depth` u32, counters non-negative safe integers; `last_suspend` and
 * `last_resumed_turn` may be `null`. Throws an `Error` naming the offending path otherwise.
 * The result is built in the spec's key order.
 *
 * @deprecated a stored snapshot is `readStoredSnapshot(db, osSnapshotProjection, sessionId).json`,
 * the spec's JSON as `canonicalOsSnapshot` builds it.
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
    ...countsOf(top),
  };
}

function countsOf(top: Record<OsSnapshotCounter, unknown>): OsSnapshotCounts {
  return Object.fromEntries(OS_SNAPSHOT_COUNTER_NAMES.map((counter) => [counter, count(top[counter], `$.${counter}`)])) as Record<OsSnapshotCounter, number>;
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
