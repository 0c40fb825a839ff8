import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { exactInteger } from '../db/exact-integer.js';
import type { JsonObject, JsonValue } from '../json/json-value.js';
import { parseJson } from '../json/parse-json.js';
import type { StoredLogReader } from '../stored-log/read-session.js';
import { readStoredEvent } from '../stored-log/read-stored-event.js';
import { foldEvents } from './fold-events.js';
import { type FoldedProjection, hasInMemoryFold, type Projection } from './projection.js';
import type { StoppedSession } from './sql/batch-sql.js';

/**
 * Where a session's snapshot stopped (it is the fold of the events before), and why.
 *
 * @example
 * ```ts
 * const stop = (await readStoredSnapshot(db, projection, 'session-1'))?.stopped;
 * if (stop) console.log(`stopped at seq ${stop.seq} (${stop.reason}): ${stop.problem}`);
 * ```
 */
export type SessionStop = Omit<StoppedSession, 'session_id'>;

/** A session's snapshot as a projection's tables hold it: its JSON, the seq of the last event folded into it, and where it stopped. */
export interface StoredSnapshot {
  json: JsonValue;
  lastSeq: number;
  stopped: SessionStop | null;
}

/**
 * A session's snapshot as a projection's tables hold it (through its `snapshotView`), or
 * `undefined` when the projector has not reached the session. A session stopped before its
 * first event was folded has the JSON of the projection's `init()`.
 *
 * @example
 * ```ts
 * const stored = await readStoredSnapshot(db, projection, 'session-1');
 * if (stored?.stopped) console.log(`folded through seq ${stored.lastSeq}, stopped: ${stored.stopped.problem}`);
 * ```
 */
export async function readStoredSnapshot(db: Kysely<DB>, projection: Projection, sessionId: string): Promise<StoredSnapshot | undefined> {
  return (await readStoredSnapshots(db, projection, [sessionId])).get(sessionId);
}

/**
 * {@link readStoredSnapshot} of many sessions in one query (a page of `verify`; on Citus one
 * query on every shard rather than one per session): those the projection has not reached are
 * missing from the map.
 */
export async function readStoredSnapshots(db: Kysely<DB>, projection: Projection, sessionIds: readonly string[]): Promise<Map<string, StoredSnapshot>> {
  const { rows } = await sql<{ session_id: string; json: string | null; last_seq: string | number | null; stop_seq: string | number | null; position: string | number | null } & Partial<Record<Exclude<keyof SessionStop, 'seq' | 'position'>, unknown>>>`
    SELECT h.session_id, j.snapshot::text AS json, s.last_seq, b.seq AS stop_seq, b.position, b.kind, b.reason, b.problem
    FROM sessions AS h
    LEFT JOIN ${sql.table(projection.snapshotView)} AS j ON j.session_id = h.session_id
    LEFT JOIN ${sql.table(projection.sessionHeads)} AS s ON s.session_id = h.session_id
    LEFT JOIN projection_blocked_sessions AS b ON b.session_id = h.session_id AND b.projection = ${projection.name}
    WHERE h.session_id = ANY (${sessionIds}::text[])`.execute(db);
  const snapshots = new Map<string, StoredSnapshot>();
  for (const row of rows) {
    if (row.json === null && row.stop_seq === null) continue;
    const stopped: SessionStop | null =
      row.stop_seq === null
        ? null
        : {
            seq: exactInteger(row.stop_seq),
            position: row.position === null ? null : exactInteger(row.position),
            kind: row.kind as string | null,
            reason: row.reason as SessionStop['reason'],
            problem: row.problem as string,
          };
    snapshots.set(
      row.session_id,
      row.json === null ? { json: hasInMemoryFold(projection) ? projection.toJson(projection.init()) : null, lastSeq: -1, stopped } : { json: parseJson(row.json), lastSeq: exactInteger(row.last_seq!), stopped },
    );
  }
  return snapshots;
}

/** Positions of the session's events that `--skip-invalid` set aside for the projection (it did not fold them). */
export async function skippedPositions(db: Kysely<DB>, projection: Projection, sessionId: string): Promise<Set<number>> {
  return (await skippedPositionsOf(db, projection, [sessionId])).get(sessionId) ?? new Set();
}

/** {@link skippedPositions} of many sessions in one query: a session without any is missing from the map. */
export async function skippedPositionsOf(db: Kysely<DB>, projection: Projection, sessionIds: readonly string[]): Promise<Map<string, Set<number>>> {
  const rows = await db
    .selectFrom('projection_errors')
    .select(['session_id', 'position'])
    .where('projection', '=', projection.name)
    .where('session_id', '=', sql<string>`ANY (${sessionIds}::text[])`)
    .execute();
  const positions = new Map<string, Set<number>>();
  for (const row of rows) {
    const set = positions.get(row.session_id) ?? new Set<number>();
    set.add(exactInteger(row.position));
    positions.set(row.session_id, set);
  }
  return positions;
}

/** A session's state folded from its log, the seq of the last event folded, and where the fold stopped. */
export interface FoldedLog<State> {
  state: State;
  lastSeq: number;
  stopped: SessionStop | null;
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
 * A projection's in-memory fold of a session's stored log: the reference its SQL snapshot must
 * equal. It reads each event as the projector does, and stops where the projector stops a
 * session: at the first event the projection cannot read (unless it was set aside), or at a
 * seq missing from the log. A stored event that is no event at all (written around the store)
 * is a `CorruptEventError` naming its session and seq.
 *
 * @example
 * ```ts
 * const { state, lastSeq } = await foldStoredLog(storedLogReader(db), projection, 'session-1', { toSeq: 10 });
 * console.log(stringifyJson(projection.toJson(state)));
 * ```
 */
export async function foldStoredLog<State>(
  store: StoredLogReader,
  projection: FoldedProjection<State>,
  sessionId: string,
  options: FoldLogOptions = {},
): Promise<FoldedLog<State>> {
  let state = projection.init();
  let lastSeq = -1;
  let page: { seq: number; position: number; kind: string; event: JsonObject }[] = [];
  const foldPage = (): SessionStop | null => {
    const fold = foldEvents(
      projection,
      page.map((stored) => stored.event),
      state,
      { skip: (index) => options.skippedPositions?.has(page[index]!.position) ?? false },
    );
    state = fold.state;
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
  // Each event read once it is known to be folded: one past `toSeq` may stay unread.
  for await (const stored of store.readSessionText(sessionId)) {
    if (options.toSeq !== undefined && stored.seq > options.toSeq) break;
    if (stored.seq !== expectedSeq) {
      const stopped = foldPage();
      if (stopped !== null) return { state, lastSeq, stopped };
      const problem = `seq ${expectedSeq} is missing from the log (the next stored event is seq ${stored.seq})`;
      return { state, lastSeq, stopped: { seq: expectedSeq, position: null, kind: null, reason: 'hole', problem } };
    }
    expectedSeq += 1;
    page.push({ seq: stored.seq, position: stored.position, kind: stored.kind, event: readStoredEvent(stored) });
    if (page.length >= PAGE) {
      const stopped = foldPage();
      if (stopped !== null) return { state, lastSeq, stopped };
    }
  }
  const stopped = foldPage();
  return { state, lastSeq, stopped };
}
