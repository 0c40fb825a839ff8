import type { LocalPostgres } from '../db/local-postgres.js';
import { idleMsFromEnv } from '../db/server-idle.js';
import { type CliIo, withDatabase, write } from './cli-context.js';

/** Where the embedded PostgreSQL keeps its files when neither `--data-dir` nor the environment says. */
export const DEFAULT_DATA_DIR = '.os-audit';

/**
 * The data directory of the embedded PostgreSQL: `--data-dir`, else `$OS_AUDIT_DATA_DIR`, else
 * `.os-audit`.
 *
 * @example
 * ```ts
 * const dataDir = embeddedDataDir(command.optsWithGlobals(), io.env);
 * ```
 */
export function embeddedDataDir(options: { dataDir?: string }, env: NodeJS.ProcessEnv): string {
  return options.dataDir ?? env.OS_AUDIT_DATA_DIR ?? DEFAULT_DATA_DIR;
}

/**
 * The database of a command that names none: the embedded PostgreSQL in `dataDir`. It is started
 * on demand, or joined when another command such as a running daemon uses it. It is brought to
 * the latest migration, since nobody else manages its schema. `user` says what uses it (for
 * `os-audit db status`). The server stops when its last user has been gone for the idle time
 * (`OS_AUDIT_DB_IDLE_SECONDS`, default 30 s), so that a burst of commands starts it once.
 *
 * @example
 * ```ts
 * const server = await openEmbeddedDatabase(io, '.os-audit', 'os-audit snapshot s1');
 * try { … server.url … } finally { await server.stop(); }
 * ```
 */
export async function openEmbeddedDatabase(io: CliIo, dataDir: string, user: string): Promise<LocalPostgres> {
  // Loaded only when a command has no database URL: the server's code and the migrations are large.
  const [{ startLocalPostgres }, { migrateToLatest }] = await Promise.all([import('../db/local-postgres.js'), import('../migrate-to-latest.js')]);
  const server = await startLocalPostgres({ dataDir, user, idleMs: idleMsFromEnv(io.env), onProgress: (message) => void write(io.stderr, `os-audit: no DATABASE_URL; ${message}\n`) });
  try {
    await withDatabase(server.url, migrateToLatest, { connections: 1 });
    return { ...server, stop: stopAlsoOnInterrupt(server) };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

/**
 * The server runs detached from our process group, so Ctrl-C reaches only us. A command that
 * handles the signal itself (the daemon) returns normally and leaves the server after it;
 * any other leaves it here before exiting as the signal would have.
 */
function stopAlsoOnInterrupt(server: LocalPostgres): () => Promise<void> {
  const onSignal = (signal: NodeJS.Signals) => {
    if (process.listenerCount(signal) > 1) return;
    void server.stop().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return async () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await server.stop();
  };
}
