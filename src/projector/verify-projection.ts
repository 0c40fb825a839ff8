import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { diffJson } from '../json/diff-json.js';
import { CorruptEventError } from '../stored-log/corrupt-event-error.js';
import { type StoredLogReader, storedLogReader } from '../stored-log/read-session.js';
import { type FoldedProjection, hasInMemoryFold, type Projection } from './projection.js';
import { foldStoredLog, readStoredSnapshots, type SessionStop, type StoredSnapshot, skippedPositionsOf } from './stored-snapshot.js';

/** Sessions whose snapshots and set-aside events are read in one query each. */
const PAGE = 200;

/** A session whose SQL snapshot is not the fold of its log. */
export interface SnapshotMismatch {
  sessionId: string;
  differences: string[];
}

/** A session whose stored log holds an event that is no event (see `CorruptEventError`): it was not compared. */
export interface CorruptLog {
  sessionId: string;
  /** The seq of the first such event read. */
  seq: number;
  problem: string;
}

/**
 * What {@link verifyProjection} found: sessions looked at, those whose snapshot differs, those
 * whose log holds a corrupt event, and those not projected yet.
 */
export interface VerifyReport {
  checked: number;
  mismatches: SnapshotMismatch[];
  corrupt: CorruptLog[];
  /** Sessions the projector has not reached yet (nothing to compare). */
  pending: string[];
  /**
   * Whether the snapshots were compared with a fold: false for a SQL-only projection, whose
   * sessions are checked only for how far they were folded and where they stopped.
   */
  snapshotsCompared: boolean;
}

/** Which sessions to verify. */
export type VerifySelection = { sessions: readonly string[] } | { all: true } | { sample: number };

/**
 * Proves a projection's SQL snapshots right. Each selected session's JSON in its
 * `snapshotView` is compared with `toJson` of the in-memory fold of its stored log, up to the
 * last event the projection folded. Only the events `--skip-invalid` set aside are skipped: the
 * projection did not fold them either. A session the projection stopped must stop at the same
 * event, for the same reason, in memory. A session whose log holds a stored event that is no
 * event is reported in `corrupt`, and the others are verified all the same. A SQL-only
 * projection's sessions are checked for where they were folded to and stopped, not compared.
 *
 * @example
 * ```ts
 * const report = await verifyProjection(db, projection, { all: true });
 * if (report.mismatches.length > 0 || report.corrupt.length > 0) process.exitCode = 1;
 * ```
 */
export async function verifyProjection(
  db: Kysely<DB>,
  projection: Projection,
  selection: VerifySelection,
  onProgress?: (checked: number, total: number) => void,
): Promise<VerifyReport> {
  const store = storedLogReader(db);
  const sessionIds = await selectSessions(db, selection);
  const report: VerifyReport = { checked: 0, mismatches: [], corrupt: [], pending: [], snapshotsCompared: hasInMemoryFold(projection) };
  for (let from = 0; from < sessionIds.length; from += PAGE) {
    const page = sessionIds.slice(from, from + PAGE);
    const snapshots = await readStoredSnapshots(db, projection, page);
    const skipped = await skippedPositionsOf(db, projection, page);
    for (const sessionId of page) {
      try {
        const differences = await verifySession(db, store, projection, sessionId, snapshots.get(sessionId), skipped.get(sessionId));
        if (differences === 'pending') report.pending.push(sessionId);
        else if (differences.length > 0) report.mismatches.push({ sessionId, differences });
      } catch (error) {
        if (!(error instanceof CorruptEventError)) throw error;
        report.corrupt.push({ sessionId, seq: error.seq, problem: error.problem });
      }
      report.checked += 1;
      onProgress?.(report.checked, sessionIds.length);
    }
  }
  return report;
}

async function verifySession(
  db: Kysely<DB>,
  store: StoredLogReader,
  projection: Projection,
  sessionId: string,
  stored: StoredSnapshot | undefined,
  skippedPositions: ReadonlySet<number> | undefined,
): Promise<string[] | 'pending'> {
  if (stored === undefined) {
    return (await projectorHasPassed(db, projection, sessionId))
      ? ['no snapshot row, but the projector has read events of this session']
      : (await hasEvents(db, sessionId))
        ? 'pending'
        : ['no such session: no events are stored for it'];
  }
  // A stopped session is folded until the log's own fold stops: it must stop at the same place.
  const fold = hasInMemoryFold(projection) ? projection : readsOnly(projection);
  const folded = await foldStoredLog(store, fold, sessionId, {
    toSeq: stored.stopped === null ? stored.lastSeq : undefined,
    skippedPositions,
  });
  const differences = fold === projection ? diffJson(stored.json, fold.toJson(folded.state), ['sql', 'log']) : [];
  if (folded.lastSeq !== stored.lastSeq) differences.unshift(`last_seq: sql ${stored.lastSeq}, log ${folded.lastSeq}`);
  const where = (stop: SessionStop | null) => (stop === null ? 'not stopped' : `stopped at seq ${stop.seq} (${stop.reason}: ${stop.problem})`);
  if (stored.stopped?.seq !== folded.stopped?.seq || stored.stopped?.reason !== folded.stopped?.reason) {
    differences.push(`stop: sql ${where(stored.stopped)}, log ${where(folded.stopped)}`);
  }
  return differences;
}

async function selectSessions(db: Kysely<DB>, selection: VerifySelection): Promise<string[]> {
  if ('sessions' in selection) return [...selection.sessions];
  let query = db.selectFrom('sessions').select('session_id');
  query = 'sample' in selection ? query.orderBy(sql`random()`).limit(selection.sample) : query.orderBy('session_id');
  return (await query.execute()).map((row) => row.session_id);
}

async function projectorHasPassed(db: Kysely<DB>, projection: Projection, sessionId: string): Promise<boolean> {
  const { rows } = await sql<{ passed: boolean }>`
    SELECT EXISTS (
      SELECT 1 FROM session_events e, projection_checkpoints c
      WHERE c.projection = ${projection.name} AND e.session_id = ${sessionId}
        AND (e.transaction_id, e.position) <= (c.transaction_id, c.position)) AS passed`.execute(db);
  return rows[0]!.passed;
}

async function hasEvents(db: Kysely<DB>, sessionId: string): Promise<boolean> {
  const row = await db.selectFrom('sessions').select('session_id').where('session_id', '=', sessionId).executeTakeFirst();
  return row !== undefined;
}

/** A SQL-only projection's reads with a fold that keeps nothing: where its sessions stop, without a snapshot. */
function readsOnly(projection: Projection): FoldedProjection<null> {
  return { ...projection, init: () => null, evolve: () => null, toJson: () => null };
}
