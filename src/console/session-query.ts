import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { indentJson } from '../json/json-text.js';
import { parseJson } from '../json/parse-json.js';
import { stringifyJson } from '../json/stringify-json.js';
import { hasInMemoryFold, type Projection } from '../projector/projection.js';
import { foldStoredLog, skippedPositions } from '../projector/stored-snapshot.js';
import { readSessionText, storedLogReader } from '../stored-log/read-session.js';
import type { ConsoleAccess } from './console-access.js';
import type { StopFacts } from './older-format.js';

/** Events shown per page of a session's timeline. */
export const TIMELINE_PAGE = 100;

/** A session's snapshot as the page shows it: the JSON text `os-audit snapshot` prints, or why there is none. */
export type SnapshotView =
  | { kind: 'json'; text: string; atSeq: number | null }
  | { kind: 'none'; reason: string };

/** One event of the timeline; `json` is null where the role may not read event bodies. */
export interface TimelineEvent {
  seq: number;
  kind: string;
  recordedAt: Date;
  json: string | null;
}

/** A projection's stop of the session: the event it stopped at, and why. */
export interface SessionStop extends StopFacts {
  seq: number;
  reason: string;
}

/** Everything the session page shows. */
export interface ConsoleSession {
  sessionId: string;
  events: number;
  firstRecordedAt: Date;
  lastRecordedAt: Date;
  projectedSeq: number | null;
  suspended: boolean;
  suspendReason: string | null;
  /** Where and why each projection that stopped the session stopped it, by projection name. */
  stops: SessionStop[];
  snapshot: SnapshotView;
  processes: { agentId: string; state: string; role: string | null; parentSessionId: string | null; turn: number; lastSeq: number }[];
  signals: { seq: number; signalId: string; disposition: string; queueDepth: number; turn: number }[];
  timeline: TimelineEvent[];
  /** The first seq of the timeline's next page, or null on its last. */
  timelineNext: number | null;
}

export interface SessionQuery {
  sessionId: string;
  /** The snapshot as it was after this seq (folded from the log); default the projection's stored one. */
  atSeq?: number;
  /** The timeline's first seq; default 0. */
  fromSeq?: number;
}

/**
 * One session for the console, or undefined when no event of it is stored. It has its overview
 * (the view `os_session_overview`), snapshot, processes, signals and a page of its event
 * timeline. The snapshot at `atSeq` is folded from the log as `os-audit snapshot --at-seq` does,
 * with the same JSON text. The timeline has each event's JSON where the role may read event
 * bodies, else comes from `os_event_activity` without them.
 *
 * @example
 * ```ts
 * const session = await readConsoleSession(db, projection, access, { sessionId: 'sample-000000', atSeq: 3 });
 * if (session?.snapshot.kind === 'json') console.log(session.snapshot.text);
 * ```
 */
export async function readConsoleSession(db: Kysely<DB>, projection: Projection, access: ConsoleAccess, query: SessionQuery): Promise<ConsoleSession | undefined> {
  const { sessionId } = query;
  const overview = await db
    .selectFrom('os_session_overview')
    .select(['events', 'first_recorded_at', 'last_recorded_at', 'projected_seq', 'suspended', 'last_suspend_reason'])
    .where('session_id', '=', sessionId)
    .executeTakeFirst();
  if (overview === undefined) return undefined;
  const events = Number(overview.events);
  const processes = await db
    .selectFrom('os_processes')
    .select(['agent_id', 'state', 'role', 'parent_session_id', 'turn', 'last_seq'])
    .where('session_id', '=', sessionId)
    .orderBy('first_seq')
    .execute();
  const stops = await db
    .selectFrom('os_blocked_sessions')
    .select(['projection', 'blocked_at_seq', 'kind', 'reason', 'problem'])
    .where('session_id', '=', sessionId)
    .orderBy('projection')
    .execute();
  const signals = await db.selectFrom('os_signals').select(['seq', 'signal_id', 'disposition', 'queue_depth', 'turn']).where('session_id', '=', sessionId).orderBy('seq').execute();
  const fromSeq = Math.min(Math.max(query.fromSeq ?? 0, 0), Math.max(events - 1, 0));
  const timeline = access.eventBodies ? await timelineWithBodies(db, sessionId, fromSeq) : await timelineWithoutBodies(db, sessionId, fromSeq);
  const lastShown = timeline[timeline.length - 1]?.seq;
  return {
    sessionId,
    events,
    firstRecordedAt: overview.first_recorded_at!,
    lastRecordedAt: overview.last_recorded_at!,
    projectedSeq: overview.projected_seq === null ? null : Number(overview.projected_seq),
    suspended: overview.suspended ?? false,
    suspendReason: overview.last_suspend_reason,
    stops: stops.map((row) => ({ projection: row.projection!, seq: Number(row.blocked_at_seq), kind: row.kind, reason: row.reason!, problem: row.problem! })),
    snapshot: await readSnapshot(db, projection, access, sessionId, events - 1, query.atSeq),
    processes: processes.map((row) => ({
      agentId: row.agent_id,
      state: row.state,
      role: row.role,
      parentSessionId: row.parent_session_id,
      turn: Number(row.turn),
      lastSeq: Number(row.last_seq),
    })),
    signals: signals.map((row) => ({ seq: Number(row.seq), signalId: row.signal_id, disposition: row.disposition, queueDepth: Number(row.queue_depth), turn: Number(row.turn) })),
    timeline,
    timelineNext: lastShown !== undefined && lastShown < events - 1 ? lastShown + 1 : null,
  };
}

async function readSnapshot(db: Kysely<DB>, projection: Projection, access: ConsoleAccess, sessionId: string, lastSeq: number, atSeq: number | undefined): Promise<SnapshotView> {
  if (atSeq === undefined) {
    const { rows } = await sql<{ snapshot: string }>`SELECT snapshot::text AS snapshot FROM ${sql.table(projection.snapshotView)} WHERE session_id = ${sessionId}`.execute(db);
    if (rows[0] === undefined) return { kind: 'none', reason: `not projected yet: the ${projection.name} projection has not reached this session (see the projections page)` };
    return { kind: 'json', text: asCliPrintsIt(rows[0].snapshot), atSeq: null };
  }
  if (!access.eventBodies) return { kind: 'none', reason: 'a snapshot at an earlier seq is folded from the event bodies, which this database role may not read' };
  if (atSeq > lastSeq) return { kind: 'none', reason: `the session ends at seq ${lastSeq}; there is no seq ${atSeq}` };
  if (!hasInMemoryFold(projection)) return { kind: 'none', reason: `the ${projection.name} projection is SQL-only: it has no in-memory fold to compute a snapshot at an earlier seq` };
  // What `os-audit snapshot --at-seq` folds: the log up to that seq, without the events set aside.
  const folded = await foldStoredLog(storedLogReader(db), projection, sessionId, { toSeq: atSeq, skippedPositions: await skippedPositions(db, projection, sessionId) });
  if (folded.stopped !== null) {
    return { kind: 'none', reason: `the ${projection.name} projection stops this session at seq ${folded.stopped.seq} (${folded.stopped.problem}); its snapshot is the one after seq ${folded.lastSeq}` };
  }
  return { kind: 'json', text: indentJson(stringifyJson(projection.toJson(folded.state)), 2), atSeq };
}

/** JSON text indented as `os-audit snapshot` prints it. */
function asCliPrintsIt(text: string): string {
  return indentJson(stringifyJson(parseJson(text)), 2);
}

async function timelineWithBodies(db: Kysely<DB>, sessionId: string, fromSeq: number): Promise<TimelineEvent[]> {
  const events: TimelineEvent[] = [];
  for await (const stored of readSessionText(db, sessionId, { fromSeq, pageSize: TIMELINE_PAGE })) {
    events.push({ seq: stored.seq, kind: stored.kind, recordedAt: stored.recordedAt, json: indentJson(stored.text, 2) });
    if (events.length === TIMELINE_PAGE) break;
  }
  return events;
}

async function timelineWithoutBodies(db: Kysely<DB>, sessionId: string, fromSeq: number): Promise<TimelineEvent[]> {
  const rows = await db
    .selectFrom('os_event_activity')
    .select(['seq', 'kind', 'recorded_at'])
    .where('session_id', '=', sessionId)
    .where('seq', '>=', fromSeq)
    .orderBy('seq')
    .limit(TIMELINE_PAGE)
    .execute();
  return rows.map((row) => ({ seq: Number(row.seq), kind: row.kind!, recordedAt: row.recorded_at!, json: null }));
}
