import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../db/schema.js';
import { type ProjectionStatus, readProjectionStatus } from '../projector/projection-status.js';
import type { ProjectorEvent } from '../projector/projector.js';
import type { HttpAccess } from './http-access.js';
import { json, type Routes, startObservabilityServer } from './observability-server.js';
import { ProjectorMetrics } from './projector-metrics.js';
import { Readiness } from './readiness.js';
import { pollStatus } from './status-poller.js';

/** How often the projections' status (lag, readiness's database check) is read: one read at a time. */
export const STATUS_READ_INTERVAL_MS = 1000;

export interface ProjectorMonitorOptions {
  db: Kysely<DB>;
  /** The daemon's projections: each has its own series, readiness and status reads. */
  projections: readonly string[];
  /** The daemon's lease owner. */
  owner: string;
  host: string;
  /** 0 lets the system choose a free port (see {@link ProjectorMonitor.url}). */
  port: number;
  /** The lease's time to live: `/readyz` fails after three of them (or three poll intervals, if longer) without news. */
  leaseTtlMs: number;
  /** The daemon's longest wait between rounds when nothing is appended. */
  pollIntervalMs: number;
  log: Logger;
  /** More routes on the same server: the web console (see `createConsoleRoutes`). */
  routes?: Routes;
  /** The Host names served beyond loopback's and the console's token (see `startObservabilityServer`). */
  access?: HttpAccess;
}

export interface ProjectorMonitor {
  /** Where `/metrics`, `/healthz` and `/readyz` are served. */
  readonly url: string;
  /** Pass every event of the projector of `projection` here. */
  record(projection: string, event: ProjectorEvent): void;
  /** Reports not ready from now on (the daemon is shutting down). */
  stopping(): void;
  /** Stops the status reads and the server. */
  close(): Promise<void>;
}

/**
 * Serves a projector daemon's metrics and health over HTTP, reading each projection's status
 * every second. `/metrics` is Prometheus text; `/healthz` is 200 while the process answers.
 * `/readyz` is 200 while the daemon does its job for every projection, else 503 with the
 * reasons.
 *
 * @example
 * ```ts
 * const monitor = await startProjectorMonitor({ db, projections: [projection.name], owner, host: '127.0.0.1', port: 9464, leaseTtlMs: 5000, pollIntervalMs: 1000, log });
 * const projector = new Projector(db, projection, { owner, onEvent: (event) => monitor.record(projection.name, event) });
 * await projector.run(signal);
 * await monitor.close();
 * ```
 */
export async function startProjectorMonitor(options: ProjectorMonitorOptions): Promise<ProjectorMonitor> {
  const { db, projections, owner, log } = options;
  const metrics = new ProjectorMetrics({ projections, owner });
  const staleAfterMs = 3 * Math.max(options.leaseTtlMs, options.pollIntervalMs);
  const readiness = new Map(projections.map((projection) => [projection, new Readiness({ staleAfterMs })]));
  const startedAt = Date.now();
  const server = await startObservabilityServer(options.host, options.port, {
    ...options.routes,
    '/metrics': async () => ({ status: 200, contentType: metrics.contentType, body: await metrics.render() }),
    '/healthz': () => json(200, { status: 'ok', owner, uptimeSeconds: Math.round((Date.now() - startedAt) / 1000) }),
    '/readyz': () => {
      const reports = [...readiness].map(([projection, each]) => ({ projection, ...each.check() }));
      const unready = reports.filter((report) => !report.ready);
      const reason = unready.length === 0 ? {} : { reason: unready.map((report) => `${report.projection}: ${report.reason}`).join('; ') };
      return json(unready.length === 0 ? 200 : 503, { status: unready.length === 0 ? 'ready' : 'not ready', owner, ...reason, projections: reports });
    },
  }, options.access);
  let statusFailing = false;
  const stopPolling = pollStatus(
    async () => {
      const statuses: ProjectionStatus[] = [];
      for (const projection of projections) statuses.push(await readProjectionStatus(db, projection));
      return statuses;
    },
    STATUS_READ_INTERVAL_MS,
    (statuses, error) => {
      for (const each of readiness.values()) each.recordStatusRead(error);
      for (const status of statuses ?? []) metrics.recordStatus(status);
      // Said once per outage; the projector's own retries are logged as they come.
      if (error && !statusFailing) log.warn({ event: 'status', err: error }, `cannot read the projections' status: ${error.message}`);
      if (!error && statusFailing) log.info({ event: 'status' }, "reading the projections' status again");
      statusFailing = error !== undefined;
    },
  );
  return {
    url: server.url,
    record: (projection, event) => {
      metrics.record(projection, event);
      readiness.get(projection)?.record(event);
    },
    stopping: () => {
      for (const each of readiness.values()) each.stopping();
    },
    close: async () => {
      await stopPolling();
      await server.close();
    },
  };
}
