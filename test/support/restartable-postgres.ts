import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startLocalPostgres } from '../../src/db/local-postgres.js';
import { findPostgresBinaries } from '../../src/db/postgres-binaries.js';

const run = promisify(execFile);

/** How `pg_ctl` stops the server: `fast` rolls back and closes sessions; `immediate` is a crash (recovery at the next start). */
export type ShutdownMode = 'fast' | 'immediate';

/** A PostgreSQL server of one's own, in a temporary folder, that can be restarted under load. */
export interface RestartablePostgres {
  /** A superuser connection string to its `postgres` database. */
  adminUrl: string;
  /** Stops the server (`mode`) and starts it again on the same port with the same settings. */
  restart(mode: ShutdownMode): Promise<void>;
  /** Stops the server (`mode`) and leaves it down until {@link up}. */
  down(mode: ShutdownMode): Promise<void>;
  /** Starts it again after {@link down}, on the same port with the same settings. */
  up(): Promise<void>;
  /** Stops the server and removes its folder. */
  stop(): Promise<void>;
}

/**
 * Starts a private server with `startLocalPostgres` in a temporary folder (never the shared
 * one: restarting that would break everybody's tests).
 *
 * @example
 * ```ts
 * const server = await startRestartablePostgres();
 * await server.restart('immediate'); // a crash and recovery, under whatever runs against it
 * await server.stop();
 * ```
 */
export async function startRestartablePostgres(settings: Readonly<Record<string, string>> = { max_connections: '200' }): Promise<RestartablePostgres> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'os-audit-faults-pg-'));
  const server = await startLocalPostgres({ dataDir, database: 'postgres', settings });
  const cluster = path.join(dataDir, 'pgdata');
  const { pg_ctl } = await findPostgresBinaries();
  // pg_ctl must run as the account that owns the cluster (`postgres` when we are root).
  const owner = statSync(cluster);
  const account = process.getuid?.() === 0 ? { uid: owner.uid, gid: owner.gid } : {};
  const pgCtl = (args: string[]) => run(pg_ctl, [...args, '-D', cluster, '-w', '-t', '60'], { ...account, cwd: cluster });
  const startOptions = [`-p ${new URL(server.adminUrl).port}`, ...Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`)].join(' ');
  return {
    adminUrl: server.adminUrl,
    down: async (mode) => void (await pgCtl(['stop', '-m', mode])),
    up: async () => void (await pgCtl(['start', '-l', path.join(cluster, 'server.log'), '-o', startOptions])),
    async restart(mode) {
      // `restart` reuses the options of the last start (postmaster.opts): same port, same settings.
      // The log file keeps the server off our pipes, which pg_ctl would otherwise hold open.
      await pgCtl(['restart', '-m', mode, '-l', path.join(cluster, 'server.log')]);
    },
    async stop() {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
