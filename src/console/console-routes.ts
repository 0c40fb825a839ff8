import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { isSchemaBehind } from '../db/schema-behind.js';
import { json, type RouteRequest, type RouteResponse, type Routes } from '../observability/observability-server.js';
import type { Projection } from '../projector/projection.js';
import { loadConsoleAssets } from './console-assets.js';
import { type ConsoleAccess, readConsoleAccess } from './console-access.js';
import { type Html, html } from './html.js';
import { renderLayout, type PageFrame } from './pages/layout.js';
import { renderProjections } from './pages/projections-page.js';
import { renderSession } from './pages/session-page.js';
import { renderSessions } from './pages/sessions-page.js';
import { readLiveFigures } from './live-figures-query.js';
import { readConsoleProjections } from './projections-query.js';
import { decodeSessionCursor, encodeSessionCursor, type SessionCursor } from './session-cursor.js';
import { readConsoleSession } from './session-query.js';
import { listSessions, SESSION_FILTERS, type SessionFilter, type SessionListQuery } from './sessions-query.js';

/** Sessions per page of the list. */
export const SESSIONS_PAGE_SIZE = 50;

/** Connections the console's pool needs: a few pages read at the same time. */
export const CONSOLE_CONNECTIONS = 4;

export interface ConsoleRoutesOptions {
  db: Kysely<DB>;
  /** The projections of this database; the session page shows the first one's snapshot (os_snapshot by default), as `os-audit snapshot` does. */
  projections: readonly Projection[];
}

/** A request the user can fix: answered 400 (or 404) with one line saying what is wrong. */
class BadRequest extends Error {
  constructor(
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

/**
 * The web console's routes, to serve next to `/metrics` (see `startObservabilityServer`): the
 * pages `/` (projections), `/sessions`, `/sessions/<id>`, their JSON under `/api/`, the live
 * figures `/api/live` and `/assets/`. Read-only; every page works for `os_audit_reader` too
 * (without event bodies, and saying so).
 *
 * @example
 * ```ts
 * const server = await startObservabilityServer('127.0.0.1', 9464, createConsoleRoutes({ db, projections: builtInProjections }));
 * ```
 */
export function createConsoleRoutes({ db, projections }: ConsoleRoutesOptions): Routes {
  const projection = projections[0];
  if (projection === undefined) throw new Error('the console needs at least one projection');
  const assets = loadConsoleAssets();
  const page = (render: (request: RouteRequest, access: ConsoleAccess) => Promise<{ frame: PageFrame; body: Html }>) => async (request: RouteRequest): Promise<RouteResponse> => {
    let access: ConsoleAccess | undefined;
    try {
      access = await readConsoleAccess(db);
      const shown = await render(request, access);
      return htmlResponse(200, renderLayout({ ...shown.frame, notice: roleNotice(access) }, shown.body));
    } catch (error) {
      // A page, not a stack trace: what is wrong in one line.
      const [status, title, message] =
        error instanceof BadRequest
          ? [error.status, error.status === 404 ? 'Not found' : 'Bad request', error.message]
          : isSchemaBehind(error)
            ? [503, 'Not migrated', schemaBehindMessage(error)]
            : [500, 'Cannot read the database', `cannot read the database: ${error instanceof Error ? error.message : String(error)}`];
      return htmlResponse(status, renderLayout({ title, tab: 'sessions', notice: access && roleNotice(access) }, html`<p class="notice" id="error">${message}</p>`));
    }
  };
  const api = (answer: (request: RouteRequest) => Promise<unknown>) => async (request: RouteRequest): Promise<RouteResponse> => {
    try {
      return json(200, await answer(request));
    } catch (error) {
      if (error instanceof BadRequest) return json(error.status, { error: error.message });
      if (isSchemaBehind(error)) return json(503, { error: schemaBehindMessage(error) });
      throw error;
    }
  };
  const session = async (request: RouteRequest, access: ConsoleAccess) => {
    const found = await readConsoleSession(db, projection, access, { sessionId: request.rest, atSeq: seqParameter(request.url, 'at'), fromSeq: seqParameter(request.url, 'from') });
    if (found === undefined) throw new BadRequest(`no session ${JSON.stringify(request.rest)}: no event of it is stored (search for it on the sessions page)`, 404);
    return found;
  };
  return {
    '/': page(async (_request, access) => ({ frame: { title: 'Projections', tab: 'projections' }, body: renderProjections(await readConsoleProjections(db, access)) })),
    '/sessions': page(async (request) => {
      const query = sessionListQuery(request.url);
      return { frame: { title: 'Sessions', tab: 'sessions' }, body: renderSessions(query, await listSessions(db, query)) };
    }),
    '/sessions/*': page(async (request, access) => {
      const found = await session(request, access);
      return { frame: { title: `Session ${found.sessionId}`, tab: 'sessions' }, body: renderSession(found, access) };
    }),
    '/api/projections': api(async () => readConsoleProjections(db, await readConsoleAccess(db))),
    '/api/sessions': api(async (request) => {
      const { rows, next, previous } = await listSessions(db, sessionListQuery(request.url));
      // The cursors as the tokens `after` and `before` take.
      return { rows, next: next && encodeSessionCursor(next), previous: previous && encodeSessionCursor(previous) };
    }),
    '/api/sessions/*': api(async (request) => session(request, await readConsoleAccess(db))),
    '/api/live': api(() => readLiveFigures(db)),
    // Browsers ask for it on every page; the console has none.
    '/favicon.ico': () => ({ status: 204, contentType: 'image/x-icon', body: '' }),
    '/assets/*': ({ rest }) => assets(rest) ?? json(404, { error: `no asset ${JSON.stringify(rest)}` }),
  };
}

/** What a page says on a database without os-audit's schema, or with an older one. */
function schemaBehindMessage(error: unknown): string {
  return `this database has no os-audit schema, or an older one than this console (${error instanceof Error ? error.message : String(error)}): run \`os-audit migrate\``;
}

/** What the page says when the role hides something. */
function roleNotice(access: ConsoleAccess): string | undefined {
  return access.eventBodies ? undefined : 'This database role may not read event bodies: events are shown without their JSON, and there is no snapshot at an earlier seq.';
}

function htmlResponse(status: number, body: Html): RouteResponse {
  return { status, contentType: 'text/html; charset=utf-8', body: body.text };
}

/** The session list's parameters: `q` (id or its beginning), `state` (a filter), `after` or `before` (a page's cursor). */
function sessionListQuery(url: URL): SessionListQuery {
  const search = url.searchParams.get('q')?.trim() || undefined;
  const state = url.searchParams.get('state') || undefined;
  if (state !== undefined && !(state in SESSION_FILTERS)) throw new BadRequest(`unknown state filter ${JSON.stringify(state)}: use one of ${Object.keys(SESSION_FILTERS).join(', ')}`);
  return { search, filter: state as SessionFilter | undefined, after: cursorParameter(url, 'after'), before: cursorParameter(url, 'before'), pageSize: SESSIONS_PAGE_SIZE };
}

/** A page cursor parameter (`after`, `before`): absent, or a token of `encodeSessionCursor`. */
function cursorParameter(url: URL, name: string): SessionCursor | undefined {
  const token = url.searchParams.get(name);
  if (!token) return undefined;
  const cursor = decodeSessionCursor(token);
  if (cursor === undefined) throw new BadRequest(`the page cursor "${name}" is not one this console wrote: start again from the first page`);
  return cursor;
}

/** A seq parameter: absent, or an integer from 0. */
function seqParameter(url: URL, name: string): number | undefined {
  const text = url.searchParams.get(name);
  if (text === null || text === '') return undefined;
  if (!/^\d{1,15}$/.test(text)) throw new BadRequest(`"${name}" must be a seq: an integer from 0, not ${JSON.stringify(text)}`);
  return Number(text);
}
