import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Runs a compose health check of the form `["CMD", "node", "-e", SCRIPT]` on this machine, with
 * the port of its URL (`composePort`) moved to `port`; resolves to its exit code.
 *
 * @example
 * ```ts
 * expect(await runHealthCheck(service.healthcheck!.test, '9464', portOf(server))).toBe(0);
 * ```
 */
export async function runHealthCheck(test: readonly string[], composePort: string, port: number): Promise<number> {
  if (test[0] !== 'CMD' || test[1] !== 'node' || test[2] !== '-e' || test[3] === undefined) throw new Error(`not a node -e health check: ${test.join(' ')}`);
  const script = test[3].replaceAll(`:${composePort}/`, `:${port}/`);
  return run(process.execPath, ['-e', script]).then(
    () => 0,
    (error: { code: number }) => error.code,
  );
}

/** An HTTP server on a free port of 127.0.0.1 that answers `/healthz` with `status` (404 elsewhere). */
export async function serveHealthz(status: number): Promise<Server> {
  const server = createServer((request, response) => {
    response.writeHead(request.url === '/healthz' ? status : 404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

export function portOf(server: Server): number {
  return (server.address() as AddressInfo).port;
}

export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/**
 * Exit codes of a health check against a server answering 200, one answering 503, and a port
 * nobody answers on (one just closed): `[0, 1, 1]` for a check that works.
 */
export async function healthCheckOutcomes(test: readonly string[], composePort: string): Promise<[healthy: number, failing: number, silent: number]> {
  const healthy = await serveHealthz(200);
  const failing = await serveHealthz(503);
  const freedPort = portOf(healthy);
  let outcomes: [number, number];
  try {
    outcomes = [await runHealthCheck(test, composePort, portOf(healthy)), await runHealthCheck(test, composePort, portOf(failing))];
  } finally {
    await closeServer(healthy);
    await closeServer(failing);
  }
  return [...outcomes, await runHealthCheck(test, composePort, freedPort)];
}
