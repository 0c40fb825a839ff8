import { type Kysely, sql } from 'kysely';
import type { DB } from '../../src/db/schema.js';
import { EventValidationError, validateEvent } from '../../src/events/validate-event.js';
import type { SessionEvent } from '../../src/events/session-event.js';
import { ProjectionHaltedError } from '../../src/projector/projection-halted-error.js';
import type { EventStore } from '../../src/store/event-store.js';
import { foldOsSnapshot } from './fold-os-snapshot.js';
import type { OsSnapshot } from './os-snapshot.js';
import { parseOsSnapshot } from './serialize-os-snapshot.js';

/** The name of the OS snapshot's checkpoint, lease and errors. */
export const OS_SNAPSHOT_PROJECTION = 'os_snapshot';

/** A snapshot and the seq of the last event folded into it. */
export interface FoldedSnapshot {
  snapshot: OsSnapshot;
  lastSeq: number;
}

/**
 * A session's snapshot as the SQL tables hold it (through the view `os_snapshot_json`), or
 * `undefined` when the projector has not reached the session.
 */
export async function readSqlOsSnapshot(db: Kysely<DB>, sessionId: string): Promise<FoldedSnapshot | undefined> {
  const row = await db
    .selectFrom('os_snapshot_json as j')
    .innerJoin('os_snapshots as s', 's.session_id', 'j.session_id')
    .select([sql<string>`j.snapshot::text`.as('json'), 's.last_seq'])
    .where('j.session_id', '=', sessionId)
    .executeTakeFirst();
  return row === undefined ? undefined : { snapshot: parseOsSnapshot(row.json), lastSeq: row.last_seq };
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

/**
 * The in-memory fold of a session's stored log (the reference the SQL snapshot must equal),
 * reading each event as the projector does: only the fields the snapshot reads are checked,
 * and an event it cannot read stops the fold with a {@link ProjectionHaltedError}.
 */
export async function foldStoredLog(store: EventStore, sessionId: string, options: FoldLogOptions = {}): Promise<FoldedSnapshot> {
  let snapshot = foldOsSnapshot([]);
  let lastSeq = -1;
  let page: SessionEvent[] = [];
  for await (const stored of store.readSession(sessionId)) {
    if (options.toSeq !== undefined && stored.seq > options.toSeq) break;
    lastSeq = stored.seq;
    if (options.skippedPositions?.has(stored.position)) continue;
    try {
      page.push(validateEvent(stored.event, { fields: 'snapshot' }));
    } catch (error) {
      if (!(error instanceof EventValidationError)) throw error;
      throw new ProjectionHaltedError(
        `session ${JSON.stringify(sessionId)}, seq ${stored.seq} (${stored.kind}, position ${stored.position}): ${error.message}`,
        'poison',
        { position: stored.position, session_id: sessionId, seq: stored.seq, kind: stored.kind, problem: error.message },
      );
    }
    if (page.length >= 1000) {
      snapshot = foldOsSnapshot(page, snapshot);
      page = [];
    }
  }
  return { snapshot: foldOsSnapshot(page, snapshot), lastSeq };
}
