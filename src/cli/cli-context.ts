import type { Readable, Writable } from 'node:stream';
import type { Kysely } from 'kysely';
import { type ConnectionRetry, retryOnConnectionLoss } from '../db/retry-on-connection-loss.js';
import type { DB } from '../db/schema.js';
import { environmentSetting } from './environment-setting.js';
import { integerOption } from './parse-integer-option.js';

/** What a command reaches the outside world through; tests hand in their own streams. */
export interface CliIo {
  stdin: Readable;
  stdout: Writable & { isTTY?: boolean };
  stderr: Writable & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  /** The embedded server's URL, once `runCli` has started or joined it for this command. */
  embeddedDatabaseUrl?: string;
}

// Its own module, so that the settings this one reads can throw it without an import loop.
export { CliError } from './cli-error.js';

/** `--database-url`, else `DATABASE_URL`, which `runCli` sets to the embedded server's when both are absent. */
export function resolveDatabaseUrl(flag: string | undefined, io: CliIo): string {
  const url = flag ?? io.env.DATABASE_URL;
  if (!url) throw new Error('no database URL: runCli starts the embedded PostgreSQL before a command runs');
  return url;
}

/** How long a command waits for a database it cannot reach, or has lost, before it fails. */
export const COMMAND_RETRY_MS = 60_000;

/** The variable that sets {@link COMMAND_RETRY_MS} in whole seconds, 0 to fail at once. */
export const CONNECT_RETRY_ENV = 'OS_AUDIT_CONNECT_RETRY_SECONDS';

/** A command's {@link ConnectionRetry}, told when a connection is made again. */
export interface CommandRetry extends ConnectionRetry {
  /** The outage is over: a later one has a deadline of its own, and is told again. */
  connected(): void;
}

/**
 * How a command rides through a lost connection: tried again for {@link COMMAND_RETRY_MS} (or
 * {@link CONNECT_RETRY_ENV}) from an outage's first failure, saying so once on stderr. The waits
 * for a connection and the runs of the work share that deadline, so that the command ends when
 * it passes rather than wait again at each level.
 */
export function commandRetry(io: Pick<CliIo, 'stderr' | 'env'>): CommandRetry {
  const seconds = environmentSetting(io.env, CONNECT_RETRY_ENV, integerOption(0));
  const retryForMs = seconds === undefined ? COMMAND_RETRY_MS : seconds * 1000;
  let deadline = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  return {
    retryForMs,
    get signal() {
      return deadline.signal;
    },
    onRetry: (error) => {
      if (timer !== undefined) return;
      timer = setTimeout(() => deadline.abort(), retryForMs).unref();
      void write(io.stderr, `os-audit: cannot reach PostgreSQL (${error.message}); trying again for up to ${retryForMs / 1000} s\n`);
    },
    connected: () => {
      if (timer === undefined) return;
      clearTimeout(timer);
      timer = undefined;
      deadline = new AbortController();
    },
  };
}

/** How a command uses its database. */
export interface CommandDatabaseOptions {
  /** Pool size; default 2. */
  connections?: number;
  /**
   * Ride through a database that cannot be reached or is lost (see {@link commandRetry}).
   * `'connect'` waits for connections. `'work'` also runs `work` again from the start after a
   * lost connection: for commands that only read, or whose writes are idempotent, and that print
   * nothing before they end. Default: neither (the daemon has its own retries and reports).
   */
  rideThrough?: { io: Pick<CliIo, 'stderr' | 'env'>; rerun: 'connect' | 'work' };
}

/**
 * Opens the database for one command and always closes it.
 *
 * @example
 * ```ts
 * const status = await withDatabase(url, (db) => readProjectionStatus(db, projection.name), { rideThrough: { io, rerun: 'work' } });
 * ```
 */
export async function withDatabase<T>(url: string, work: (db: Kysely<DB>) => Promise<T>, options: CommandDatabaseOptions = {}): Promise<T> {
  const retry = options.rideThrough && commandRetry(options.rideThrough.io);
  // Loaded here, not at the top: kysely and pg are most of a command's start, and --help needs neither.
  const { openDatabase, poolOf } = await import('../db/open-database.js');
  const db = openDatabase({ connectionString: url, applicationName: 'os-audit-cli', maxConnections: options.connections ?? 2, connectRetry: retry });
  if (retry !== undefined) poolOf(db)!.on('connect', retry.connected);
  try {
    return retry !== undefined && options.rideThrough?.rerun === 'work' ? await retryOnConnectionLoss(() => work(db), retry) : await work(db);
  } finally {
    // Sends each connection's Terminate now, without waiting for the server to hang up (about 2
    // ms of every command). The CLI's process ends once the command returns (main.ts); a process
    // that goes on (the tests) has the sockets close by themselves. Ending can only fail
    // on a connection already broken, which there is nothing left to tell about.
    db.destroy().catch(() => {});
  }
}

/** Writes to a stream, waiting when it is full, so that large outputs keep memory bounded. */
export async function write(stream: Writable, text: string): Promise<void> {
  if (!stream.write(text)) {
    await new Promise<void>((resolve) => stream.once('drain', resolve));
  }
}
