import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { carriesToken, type HttpAccess, isServedHost, PROBE_PATHS, SECURITY_HEADERS, servedHosts, TOKENLESS_PATHS } from './http-access.js';

/** What a route answers. */
export interface RouteResponse {
  status: number;
  contentType: string;
  body: string;
  /** Extra response headers (e.g. `Location`). */
  headers?: Record<string, string>;
}

/** The request a route answers: its URL (query string included) and, under a prefix route, the path after the prefix. */
export interface RouteRequest {
  url: URL;
  /** Under `'/prefix/*'`: the decoded rest of the path after `/prefix/`; `''` for an exact route. */
  rest: string;
}

/**
 * Routes by path: a key is an exact path, or a prefix ending in `/*` that answers every path
 * under it (the longest prefix wins; an exact path wins over a prefix). Only GET and HEAD are
 * served.
 */
export type Routes = Record<string, (request: RouteRequest) => RouteResponse | Promise<RouteResponse>>;

export interface ObservabilityServer {
  /** `http://host:port`, with the port the system chose when 0 was asked for. */
  readonly url: string;
  readonly port: number;
  /** Stops listening and ends open connections (keep-alive scrapers included). */
  close(): Promise<void>;
}

/**
 * A small HTTP server for metrics, health checks and the web console. It answers only Host
 * names it serves (see `servedHosts`), 421 to others, and asks for `access.authToken` when
 * given; `/healthz` and `/readyz` answer anyone, `/metrics` any served Host without the token.
 * Every response has the {@link SECURITY_HEADERS}.
 *
 * @example
 * ```ts
 * const server = await startObservabilityServer('127.0.0.1', 9464, {
 *   '/healthz': () => json(200, { status: 'ok' }),
 * });
 * console.log(`listening on ${server.url}`);
 * await server.close();
 * ```
 */
export async function startObservabilityServer(host: string, port: number, routes: Routes, access: HttpAccess = {}): Promise<ObservabilityServer> {
  let served: ReadonlySet<string> = new Set();
  const server = createServer((request, response) => {
    void respond(routes, request, response, { served, authToken: access.authToken });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  served = servedHosts(address.address, access.allowedHosts);
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}`,
    port: address.port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/**
 * A JSON response, for a route.
 *
 * @example
 * ```ts
 * const routes: Routes = { '/readyz': () => (ready ? json(200, { status: 'ready' }) : json(503, { status: 'not ready', reason })) };
 * ```
 */
export function json(status: number, body: unknown): RouteResponse {
  return { status, contentType: 'application/json; charset=utf-8', body: `${JSON.stringify(body)}\n` };
}

/**
 * The route of a path and the rest of the path under its prefix, or undefined.
 *
 * @example
 * ```ts
 * matchRoute({ '/sessions/*': page }, '/sessions/a%2Fb'); // { route: page, rest: 'a/b' }
 * ```
 */
export function matchRoute<Route>(routes: Record<string, Route>, path: string): { route: Route; rest: string } | undefined {
  const exact = routes[path];
  if (exact !== undefined) return { route: exact, rest: '' };
  let best: { route: Route; rest: string; length: number } | undefined;
  for (const [key, route] of Object.entries(routes)) {
    if (!key.endsWith('/*')) continue;
    const prefix = key.slice(0, -1);
    if (!path.startsWith(prefix) || (best !== undefined && best.length >= prefix.length)) continue;
    let rest: string;
    try {
      rest = decodeURIComponent(path.slice(prefix.length));
    } catch {
      continue; // A malformed escape matches nothing: a 404, not a 500.
    }
    best = { route, rest, length: prefix.length };
  }
  return best && { route: best.route, rest: best.rest };
}

async function respond(routes: Routes, request: IncomingMessage, response: ServerResponse, guard: { served: ReadonlySet<string>; authToken?: string }): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const match = matchRoute(routes, url.pathname);
  let answer: RouteResponse;
  if (!PROBE_PATHS.includes(url.pathname) && !isServedHost(guard.served, request.headers.host)) {
    // Plain text, without the Host: a page of a rebound DNS name learns nothing here.
    answer = { status: 421, contentType: 'text/plain; charset=utf-8', body: 'misdirected request: this server answers only its own host names (see --allowed-host)\n' };
  } else if (guard.authToken !== undefined && !TOKENLESS_PATHS.includes(url.pathname) && !carriesToken(request.headers.authorization, guard.authToken)) {
    answer = {
      status: 401,
      contentType: 'text/plain; charset=utf-8',
      body: 'this console asks for its token: as Authorization: Bearer TOKEN, or as the password of any user\n',
      headers: { 'WWW-Authenticate': 'Basic realm="os-audit", charset="UTF-8"' },
    };
  } else if (match === undefined) {
    answer = json(404, { error: `no such path; try ${Object.keys(routes).join(', ')}` });
  } else if (request.method !== 'GET' && request.method !== 'HEAD') {
    answer = json(405, { error: 'only GET and HEAD' });
    response.setHeader('Allow', 'GET, HEAD');
  } else {
    try {
      answer = await match.route({ url, rest: match.rest });
    } catch (error) {
      answer = json(500, { error: error instanceof Error ? error.message : String(error) });
    }
  }
  response.writeHead(answer.status, { 'Content-Type': answer.contentType, 'Cache-Control': 'no-store', ...answer.headers, ...SECURITY_HEADERS });
  response.end(request.method === 'HEAD' ? undefined : answer.body);
}
