import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What a route answers. */
export interface RouteResponse {
  status: number;
  contentType: string;
  body: string;
}

/** Routes by exact path (the query string is ignored); only GET and HEAD are served. */
export type Routes = Record<string, () => RouteResponse | Promise<RouteResponse>>;

export interface ObservabilityServer {
  /** `http://host:port`, with the port the system chose when 0 was asked for. */
  readonly url: string;
  readonly port: number;
  /** Stops listening and ends open connections (keep-alive scrapers included). */
  close(): Promise<void>;
}

/**
 * A small HTTP server for metrics and health checks.
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
export async function startObservabilityServer(host: string, port: number, routes: Routes): Promise<ObservabilityServer> {
  const server = createServer((request, response) => {
    void respond(routes, request, response);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
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

async function respond(routes: Routes, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const path = new URL(request.url ?? '/', 'http://localhost').pathname;
  const route = routes[path];
  let answer: RouteResponse;
  if (route === undefined) {
    answer = json(404, { error: `no such path; try ${Object.keys(routes).join(', ')}` });
  } else if (request.method !== 'GET' && request.method !== 'HEAD') {
    answer = json(405, { error: 'only GET and HEAD' });
    response.setHeader('Allow', 'GET, HEAD');
  } else {
    try {
      answer = await route();
    } catch (error) {
      answer = json(500, { error: error instanceof Error ? error.message : String(error) });
    }
  }
  response.writeHead(answer.status, { 'Content-Type': answer.contentType, 'Cache-Control': 'no-store' });
  response.end(request.method === 'HEAD' ? undefined : answer.body);
}
