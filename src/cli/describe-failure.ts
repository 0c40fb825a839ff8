import { causes, isDiskFull } from '../db/disk-full.js';
import { isMissingObject } from '../db/schema-behind.js';
import { CliError } from './cli-context.js';

/** Where a command's database URL came from, as its error lines name it. */
export type DatabaseUrlSource = '--database-url' | 'DATABASE_URL' | 'the embedded PostgreSQL';

/** What a failure line may name besides the error: the database URL and where it came from. */
export interface FailureContext {
  databaseUrl?: string;
  databaseUrlFrom?: DatabaseUrlSource;
}

/** Example URL for error lines that ask for a correct one. */
const EXAMPLE_URL = 'postgres://USER:PASSWORD@HOST:5432/DATABASE';

/**
 * Refuses a database URL that PostgreSQL's client would misread (`notaurl` would become the
 * host `base`): a usage error (exit code 2) naming where it came from, with an example. The
 * value itself is not printed, since it may hold a password.
 *
 * @example
 * ```ts
 * checkDatabaseUrl(process.env.DATABASE_URL!, 'DATABASE_URL'); // throws for 'notaurl' or 'http://host/db'
 * ```
 */
export function checkDatabaseUrl(url: string, from: DatabaseUrlSource): void {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1]?.toLowerCase();
  const expected = `expected postgres:// or postgresql://, e.g. ${EXAMPLE_URL}`;
  if (scheme === undefined) throw new CliError(`${from} is not a URL: ${expected}`, 2);
  if (scheme !== 'postgres' && scheme !== 'postgresql') throw new CliError(`${from} is a ${scheme}:// URL: ${expected}`, 2);
  if (parseDatabaseUrl(url) === undefined) throw new CliError(`${from} is not a valid URL: ${expected}`, 2);
}

/** The URL as WHATWG parses it, or undefined; libpq also takes no host before the path (`postgres://user@/db?host=/run/postgresql`). */
function parseDatabaseUrl(url: string): URL | undefined {
  try {
    return new URL(url.replace(/@\//, '@localhost/'));
  } catch {
    return undefined;
  }
}

/** Messages of the file errors a user makes by naming the wrong path. */
const FILE_ERRORS: Record<string, string> = {
  ENOENT: 'no such file or directory',
  ENOTDIR: 'a part of the path is not a directory',
  EISDIR: 'it is a directory',
  EEXIST: 'a file of that name is in the way',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  ENOSPC: 'no space left on device: free space on its disk, then run the command again',
};

/** What a command was doing with a path, by the system call that failed. */
function pathVerb(syscall: string | undefined): string {
  if (syscall === 'mkdir') return 'create directory';
  if (syscall === 'write') return 'write';
  if (syscall === 'open' || syscall === 'read' || syscall === 'stat' || syscall === 'lstat' || syscall === 'scandir' || syscall === 'opendir' || syscall === 'realpath') return 'read';
  return 'use';
}

/**
 * One line for an ordinary mistake (a wrong path, a database URL that cannot work, a database
 * without os-audit's schema), saying what to do; undefined for any other error.
 *
 * @example
 * ```ts
 * describeFailure(Object.assign(new Error('getaddrinfo ENOTFOUND db'), { code: 'ENOTFOUND', hostname: 'db' }), { databaseUrlFrom: 'DATABASE_URL' });
 * // 'cannot resolve host db (from DATABASE_URL): fix the host in the URL'
 * ```
 */
export function describeFailure(error: unknown, context: FailureContext): string | undefined {
  const from = context.databaseUrlFrom === undefined ? '' : ` (from ${context.databaseUrlFrom})`;
  for (const cause of causes(error)) {
    const { code, path, syscall, hostname, address, port, message } = cause as NodeJS.ErrnoException & { hostname?: string; address?: string; port?: number; message: string };
    if (typeof path === 'string' && code !== undefined && code in FILE_ERRORS) return `cannot ${pathVerb(syscall)} ${path}: ${FILE_ERRORS[code]}`;
    if (isDiskFull(cause)) {
      return `PostgreSQL's disk is full (${innermostMessage(cause)})${from}: nothing of the failed write was stored; free space on the server's disk (or grow its volume), then run the command again`;
    }
    switch (code) {
      case 'ENOTFOUND':
        return `cannot resolve host ${hostname ?? '?'}${from}: fix the host in the URL`;
      case 'ECONNREFUSED':
        return `cannot connect to PostgreSQL at ${address}:${port}${from}: connection refused; start the server there, or set DATABASE_URL (or --database-url) to a running one`;
      case '3D000': // invalid_catalog_name
        return `${message}${from}: create it (createdb ${databaseName(context.databaseUrl) ?? 'NAME'}), or fix the database name in the URL`;
      case '28P01': // invalid_password
      case '28000': // invalid_authorization_specification
        return `${message}${from}: fix the user or password in the URL`;
    }
    if (isMissingObject(cause)) {
      // The outermost message: it names what failed, a projection's batch say.
      return `${databaseLabel(context.databaseUrl)} has no os-audit schema, or an older one than this os-audit (${(error as Error).message}): run \`os-audit migrate\``;
    }
  }
  return undefined;
}

/** The message of the error at the bottom of `error`'s causes: the database's or the system's own. */
function innermostMessage(error: unknown): string {
  let message = String(error);
  for (const cause of causes(error)) if (cause instanceof Error) message = cause.message;
  return message;
}

function databaseLabel(url: string | undefined): string {
  const name = databaseName(url);
  return name === undefined ? 'the database' : `database ${name}`;
}

function databaseName(url: string | undefined): string | undefined {
  const pathname = url === undefined ? undefined : parseDatabaseUrl(url)?.pathname;
  if (pathname === undefined) return undefined;
  try {
    return decodeURIComponent(pathname.slice(1)) || undefined;
  } catch {
    return undefined;
  }
}
