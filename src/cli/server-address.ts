import { InvalidArgumentError } from 'commander';
import { CliError } from './cli-context.js';
import { parseWholeNumber } from '../json/whole-number.js';

/** The default port of the daemon's and the console's server (`/metrics`, `/healthz`, `/readyz`, the web console): the OpenTelemetry Prometheus exporter's. */
export const DEFAULT_METRICS_PORT = 9464;

/** The default address that server listens on. */
export const DEFAULT_METRICS_HOST = '127.0.0.1';

/** The environment variables of `--metrics-port` and `--metrics-host`, for the daemon and the console alike. */
export const METRICS_PORT_ENV = 'OS_AUDIT_METRICS_PORT';
export const METRICS_HOST_ENV = 'OS_AUDIT_METRICS_HOST';

/**
 * Whether `text` is a TCP port, 0 to 65535 (0: any free one).
 *
 * @example
 * ```ts
 * isPortText('9464'); // true
 * isPortText('70000'); // false
 * ```
 */
export function isPortText(text: string): boolean {
  const port = parseWholeNumber(text);
  return port !== undefined && port >= 0 && port <= 65_535;
}

/**
 * Parses `--metrics-port`: `off`, or a TCP port (0: any free one).
 *
 * @example
 * ```ts
 * parseMetricsPort('9100'); // 9100
 * parseMetricsPort('off'); // 'off'
 * ```
 */
export function parseMetricsPort(text: string): number | 'off' {
  if (text === 'off') return 'off';
  if (!isPortText(text)) throw new InvalidArgumentError('expected a port from 0 to 65535, or off');
  return Number(text);
}

/**
 * A server that cannot listen on its address, as the user's to fix: a CliError naming the
 * flags; any other error is returned as it is.
 *
 * @example
 * ```ts
 * try {
 *   await startObservabilityServer(host, port, routes);
 * } catch (error) {
 *   throw listenError(error, { host, port, what: 'the console' });
 * }
 * ```
 */
export function listenError(error: unknown, { host, port, what, hint = '' }: { host: string; port: number; what: string; hint?: string }): unknown {
  const code = (error as NodeJS.ErrnoException).code;
  if (code !== 'EADDRINUSE' && code !== 'EADDRNOTAVAIL' && code !== 'EACCES' && code !== 'ENOTFOUND') return error;
  return new CliError(
    `cannot serve ${what} on ${host}:${port}: ${(error as Error).message} ` +
      `(set --metrics-port or ${METRICS_PORT_ENV} to another port, 0 for any free one${hint}; or --metrics-host or ${METRICS_HOST_ENV} to another address)`,
  );
}
