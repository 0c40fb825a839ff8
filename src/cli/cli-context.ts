import type { Readable, Writable } from 'node:stream';
import type { Kysely } from 'kysely';
import { openDatabase } from '../db/open-database.js';
import type { DB } from '../db/schema.js';

/** What a command reaches the outside world through; tests hand in their own streams. */
export interface CliIo {
  stdin: Readable;
  stdout: Writable & { isTTY?: boolean };
  stderr: Writable & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  /** The embedded server's URL, once `runCli` has started or joined it for this command. */
  embeddedDatabaseUrl?: string;
}

/** A failure the user can act on: printed as `os-audit: message`, exit code 1, no stack. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** `--database-url`, else `DATABASE_URL`, which `runCli` sets to the embedded server's when both are absent. */
export function resolveDatabaseUrl(flag: string | undefined, io: CliIo): string {
  const url = flag ?? io.env.DATABASE_URL;
  if (!url) throw new Error('no database URL: runCli starts the embedded PostgreSQL before a command runs');
  return url;
}

/** Opens the database for one command (with a pool of `connections`) and always closes it. */
export async function withDatabase<T>(url: string, work: (db: Kysely<DB>) => Promise<T>, connections = 2): Promise<T> {
  const db = openDatabase({ connectionString: url, applicationName: 'os-audit-cli', maxConnections: connections });
  try {
    return await work(db);
  } finally {
    await db.destroy();
  }
}

/** Writes to a stream, waiting when it is full, so that large outputs keep memory bounded. */
export async function write(stream: Writable, text: string): Promise<void> {
  if (!stream.write(text)) {
    await new Promise<void>((resolve) => stream.once('drain', resolve));
  }
}
