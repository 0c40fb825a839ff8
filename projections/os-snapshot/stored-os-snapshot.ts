import type { Kysely } from 'kysely';
import type { DB } from '../../src/db/schema.js';
import { stringifyJson } from '../../src/json/stringify-json.js';
import { foldStoredLog as foldProjectionLog, type FoldLogOptions, readStoredSnapshot, type SessionStop } from '../../src/projector/stored-snapshot.js';
import type { EventStore } from '../../src/store/event-store.js';
import { osSnapshotProjection } from './os-snapshot-projection.js';
import type { OsSnapshot } from './os-snapshot.js';
import { parseOsSnapshot } from './serialize-os-snapshot.js';

/**
 * The name of the OS snapshot's checkpoint, lease, stopped sessions and set-aside events.
 *
 * @example
 * ```ts
 * const status = await readProjectionStatus(db, OS_SNAPSHOT_PROJECTION);
 * ```
 */
export const OS_SNAPSHOT_PROJECTION = osSnapshotProjection.name;

export type { SessionStop };

/** A snapshot, the seq of the last event folded into it, and where it stopped, if it did. */
export interface FoldedSnapshot {
  snapshot: OsSnapshot;
  lastSeq: number;
  stopped: SessionStop | null;
}

/**
 * A session's OS snapshot as the SQL tables hold it (through the view `os_snapshot_json`), or
 * `undefined` when the projector has not reached the session (`readStoredSnapshot` for the
 * snapshot of the spec).
 *
 * @example
 * ```ts
 * const stored = await readSqlOsSnapshot(db, 'session-1');
 * if (stored?.stopped) console.log(`folded through seq ${stored.lastSeq}, stopped: ${stored.stopped.problem}`);
 * ```
 */
export async function readSqlOsSnapshot(db: Kysely<DB>, sessionId: string): Promise<FoldedSnapshot | undefined> {
  const stored = await readStoredSnapshot(db, osSnapshotProjection, sessionId);
  if (stored === undefined) return undefined;
  return { snapshot: parseOsSnapshot(stringifyJson(stored.json)), lastSeq: stored.lastSeq, stopped: stored.stopped };
}

/**
 * The in-memory OS snapshot of a session's stored log (`foldStoredLog` of `src/projector` for
 * the snapshot of the spec): the reference its SQL snapshot must equal.
 *
 * @example
 * ```ts
 * const { snapshot, lastSeq, stopped } = await foldStoredOsSnapshot(new EventStore(db), 'session-1');
 * ```
 */
export async function foldStoredOsSnapshot(store: EventStore, sessionId: string, options: FoldLogOptions = {}): Promise<FoldedSnapshot> {
  const { state, lastSeq, stopped } = await foldProjectionLog(store, osSnapshotProjection, sessionId, options);
  return { snapshot: state.snapshot, lastSeq, stopped };
}
