import { type Kysely, sql } from 'kysely';
import type { DB } from '../../src/db/schema.js';
import type { JsonObject } from '../../src/json/json-value.js';
import type { StoppedSession } from '../../src/projector/sql/batch-sql.js';
import type { EventStore } from '../../src/store/event-store.js';
import { foldOsSnapshotPrefix } from './fold-os-snapshot.js';
import { emptyOsSnapshot, type OsSnapshot } from './os-snapshot.js';
import { parseOsSnapshot } from './serialize-os-snapshot.js';

/**
 * The name of the OS snapshot's checkpoint, lease, stopped sessions and set-aside events.
 *
 * @example
 * ```ts
 * const status = await readProjectionStatus(db, OS_SNAPSHOT_PROJECTION);
 * ```
 */
export const OS_SNAPSHOT_PROJECTION = 'os_snapshot';

/**
 * Where a session's snapshot stopped (it is the fold of the events before), and why.
 *
 * @example
 * ```ts
 * const stop = (await readSqlOsSnapshot(db, 'session-1'))?.stopped;
 * if (stop) console.log(`stopped at seq ${stop.seq} (${stop.reason}): ${stop.problem}`);
 * ```
 */
export type SessionStop = Omit<StoppedSession, 'session_id'>;

/** A snapshot, the seq of the last event folded into it, and where it stopped, if it did. */
export interface FoldedSnapshot {
  snapshot: OsSnapshot;
  lastSeq: number;
  stopped: SessionStop | null;
}

/**
 * A session's snapshot as the SQL tables hold it (through the view `os_snapshot_json`), or
 * `undefined` when the projector has not reached the session. A session stopped before its
 * first event was folded has the empty snapshot.
 *
 * @example
 * ```ts
 * const stored = await readSqlOsSnapshot(db, 'session-1');
 * if (stored?.stopped) console.log(`folded through seq ${stored.lastSeq}, stopped: ${stored.stopped.problem}`);
 * ```
 */
export async function readSqlOsSnapshot(db: Kysely<DB>, sessionId: string): Promise<FoldedSnapshot | undefined> {
  const row = await db
    .selectFrom('sessions as h')
    .leftJoin('os_snapshot_json as j', 'j.session_id', 'h.session_id')
    .leftJoin('os_snapshots as s', 's.session_id', 'h.session_id')
    .leftJoin('projection_blocked_sessions as b', (join) =>
      join.onRef('b.session_id', '=', 'h.session_id').on('b.projection', '=', OS_SNAPSHOT_PROJECTION),
    )
    .select([sql<string | null>`j.snapshot::text`.as('json'), 's.last_seq', 'b.seq as stop_seq', 'b.position', 'b.kind', 'b.reason', 'b.problem'])
    .where('h.session_id', '=', sessionId)
    .executeTakeFirst();
  if (row === undefined || (row.json === null && row.stop_seq === null)) return undefined;
  const stopped =
    row.stop_seq === null
      ? null
      : { seq: row.stop_seq, position: row.position, kind: row.kind, reason: row.reason as SessionStop['reason'], problem: row.problem! };
  if (row.json === null) return { snapshot: emptyOsSnapshot(), lastSeq: -1, stopped };
  return { snapshot: parseOsSnapshot(row.json), lastSeq: row.last_seq!, stopped };
}

/** Positions of the session's events that `--skip-invalid` set aside (the projection did not fold them). */
export async function skippedPositions(db: Kysely<DB>, sessionId: string): Promise<Set<number>> {
  const rows = await db
    .selectFrom('projection_errors')
    .select('position')
    .where('projection', '=', OS_SNAPSHOT_PROJECTION)
    .where('session_id', '=', sessionId)
    .execute();
  return new Set(rows.map((row) => row.position));
}

export interface FoldLogOptions {
  /** Fold up to and including this seq; default the whole log. */
  toSeq?: number;
  /** Positions of events set aside by `--skip-invalid`: the projection did not fold them either. */
  skippedPositions?: ReadonlySet<number>;
}

/** Events folded at a time. */
const PAGE = 1000;

/**
 * The in-memory fold of a session's stored log (the reference the SQL snapshot must equal),
 * reading each event as the projector does: it stops where the projector stops a session, at
 * the first event the snapshot cannot read (unless it was set aside) or at a seq missing from
 * the log, and says so.
 */
export async function foldStoredLog(store: EventStore, sessionId: string, options: FoldLogOptions = {}): Promise<FoldedSnapshot> {
  let snapshot = emptyOsSnapshot();
  let lastSeq = -1;
  let page: { seq: number; position: number; kind: string; event: JsonObject }[] = [];
  const foldPage = (): SessionStop | null => {
    const fold = foldOsSnapshotPrefix(
      page.map((stored) => stored.event),
      snapshot,
      { skip: (index) => options.skippedPositions?.has(page[index]!.position) ?? false },
    );
    snapshot = fold.snapshot;
    if (fold.stoppedAt === null) {
      lastSeq = page.at(-1)?.seq ?? lastSeq;
      page = [];
      return null;
    }
    const at = page[fold.stoppedAt.index]!;
    lastSeq = at.seq - 1;
    return { seq: at.seq, position: at.position, kind: at.kind, reason: 'unreadable', problem: fold.stoppedAt.problem };
  };
  let expectedSeq = 0;
  for await (const stored of store.readSession(sessionId)) {
    if (options.toSeq !== undefined && stored.seq > options.toSeq) break;
    if (stored.seq !== expectedSeq) {
      const stopped = foldPage();
      if (stopped !== null) return { snapshot, lastSeq, stopped };
      const problem = `seq ${expectedSeq} is missing from the log (the next stored event is seq ${stored.seq})`;
      return { snapshot, lastSeq, stopped: { seq: expectedSeq, position: null, kind: null, reason: 'hole', problem } };
    }
    expectedSeq += 1;
    page.push({ seq: stored.seq, position: stored.position, kind: stored.kind, event: stored.event });
    if (page.length >= PAGE) {
      const stopped = foldPage();
      if (stopped !== null) return { snapshot, lastSeq, stopped };
    }
  }
  const stopped = foldPage();
  return { snapshot, lastSeq, stopped };
}
