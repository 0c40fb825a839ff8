import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import type { StopFacts } from './older-format.js';
import { type SessionCursor } from './session-cursor.js';

/** The session list's filters by state. */
export const SESSION_FILTERS = {
  suspended: 'suspended now',
  'failed-processes': 'has failed processes',
  'budget-exceeded': 'budget exceeded',
  stopped: 'stopped by a projection (any)',
} as const;

export type SessionFilter = keyof typeof SESSION_FILTERS;

/** One page's question: sessions whose id starts with `search`, in the state of `filter`, older than `after` (or newer than `before`). */
export interface SessionListQuery {
  search?: string;
  filter?: SessionFilter;
  after?: SessionCursor;
  /** The page just newer than this row (the link back from a later page). */
  before?: SessionCursor;
  pageSize: number;
}

/** A session as the list shows it. */
export interface SessionListRow {
  sessionId: string;
  events: number;
  lastRecordedAt: Date;
  suspended: boolean;
  processes: number;
  runningProcesses: number;
  failedProcesses: number;
  signals: number;
  budgetExceeded: number;
  /** Where each projection that stopped the session stopped it, by projection name. */
  stops: ListedStop[];
}

/** A projection's stop of a session, as the list shows it. */
export interface ListedStop extends StopFacts {
  seq: number;
}

/** A page of sessions, and the cursors of the older page (`next`) and of the newer one (`previous`); undefined where there is none. */
export interface SessionPage {
  rows: SessionListRow[];
  next: SessionCursor | undefined;
  previous: SessionCursor | undefined;
}

/**
 * A page of sessions, the latest activity first, from the view `os_session_overview`. Keyset
 * paging: the page after `after` (or before `before`) is a range of the index
 * `sessions_last_recorded_at_idx` (migration 0014). So it is as cheap on the ten-thousandth page
 * as on the first. A filter walks the same index and skips the sessions not in that state.
 *
 * @example
 * ```ts
 * const first = await listSessions(db, { filter: 'suspended', pageSize: 50 });
 * const second = first.next && (await listSessions(db, { filter: 'suspended', after: first.next, pageSize: 50 }));
 * ```
 */
export async function listSessions(db: Kysely<DB>, query: SessionListQuery): Promise<SessionPage> {
  let select = db
    .selectFrom('os_session_overview as o')
    .select(['o.session_id', 'o.events', 'o.last_recorded_at', 'o.suspended', 'o.processes', 'o.running_processes', 'o.signals', 'o.budget_exceeded'])
    .select(sql<string>`o.last_recorded_at::text`.as('cursor_at'))
    .select(
      sql<ListedStop[]>`(SELECT coalesce(json_agg(json_build_object('projection', b.projection, 'seq', b.blocked_at_seq, 'kind', b.kind, 'problem', b.problem) ORDER BY b.projection), '[]')
        FROM os_blocked_sessions AS b WHERE b.session_id = o.session_id)`.as('stops'),
    )
    .select((eb) =>
      eb
        .selectFrom('os_processes as p')
        .select(sql<number>`count(*)::int`.as('n'))
        .whereRef('p.session_id', '=', 'o.session_id')
        .where('p.state', '=', 'failed')
        .as('failed_processes'),
    );
  if (query.search) select = select.where('o.session_id', 'like', `${escapeLike(query.search)}%`);
  if (query.filter === 'suspended') select = select.where('o.suspended', '=', true);
  if (query.filter === 'failed-processes') {
    select = select.where(({ exists, selectFrom }) =>
      exists(selectFrom('os_processes as p').whereRef('p.session_id', '=', 'o.session_id').where('p.state', '=', 'failed').select(sql`1`.as('one'))),
    );
  }
  if (query.filter === 'budget-exceeded') {
    select = select.where(({ exists, selectFrom }) => exists(selectFrom('os_budget_exceeded as b').whereRef('b.session_id', '=', 'o.session_id').select(sql`1`.as('one'))));
  }
  // Stopped by any projection: os_session_overview's blocked_at_seq is os_snapshot's alone.
  if (query.filter === 'stopped') {
    select = select.where(({ exists, selectFrom }) => exists(selectFrom('os_blocked_sessions as b').whereRef('b.session_id', '=', 'o.session_id').select(sql`1`.as('one'))));
  }
  if (query.after) {
    select = select.where(sql<boolean>`(o.last_recorded_at, o.session_id) < (${query.after.lastRecordedAt}::timestamptz, ${query.after.sessionId}::text)`);
  }
  // Backwards: the rows just newer than `before`, read oldest first, shown newest first.
  const backwards = query.before !== undefined && query.after === undefined;
  if (backwards) {
    select = select.where(sql<boolean>`(o.last_recorded_at, o.session_id) > (${query.before!.lastRecordedAt}::timestamptz, ${query.before!.sessionId}::text)`);
  }
  const direction = backwards ? 'asc' : 'desc';
  const rows = await select.orderBy('o.last_recorded_at', direction).orderBy('o.session_id', direction).limit(query.pageSize + 1).execute();
  const more = rows.length > query.pageSize;
  const shown = rows.slice(0, query.pageSize);
  if (backwards) shown.reverse();
  const cursor = (row: (typeof rows)[number] | undefined): SessionCursor | undefined => row && { lastRecordedAt: row.cursor_at, sessionId: row.session_id! };
  return {
    rows: shown.map((row) => ({
      sessionId: row.session_id!,
      events: Number(row.events),
      lastRecordedAt: row.last_recorded_at!,
      suspended: row.suspended ?? false,
      processes: Number(row.processes),
      runningProcesses: Number(row.running_processes),
      failedProcesses: Number(row.failed_processes ?? 0),
      signals: Number(row.signals),
      budgetExceeded: Number(row.budget_exceeded),
      stops: row.stops.map((stop) => ({ ...stop, seq: Number(stop.seq) })),
    })),
    next: backwards || more ? cursor(shown[shown.length - 1]) : undefined,
    previous: (backwards ? more : query.after !== undefined) ? cursor(shown[0]) : undefined,
  };
}

/** `text` matched literally by LIKE (its `%`, `_` and `\` escaped). */
function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (character) => `\\${character}`);
}
