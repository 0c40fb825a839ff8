/** What PostgreSQL says when a write found its disk full, whatever the SQLSTATE it came with. */
const DISK_FULL_MESSAGES = [
  'No space left on device',
  // Written at a connection's start; a FATAL without errno (SQLSTATE XX000) when that fails.
  'could not write init file',
];

/** SQLSTATE disk_full. */
const DISK_FULL_SQLSTATE = '53100';

/**
 * A write PostgreSQL could not make because its disk is full: nothing of the failed statement
 * is stored. Free space on the server (or grow its volume), then write again. The database's
 * own error is the `cause`.
 *
 * @example
 * ```ts
 * try { await store.append('session-1', events); }
 * catch (error) { if (error instanceof DiskFullError) alertOnCall(error.message); else throw error; }
 * ```
 */
export class DiskFullError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DiskFullError';
  }
}

/**
 * Whether `error` (or an error it wraps) says a disk is full: SQLSTATE 53100, `ENOSPC`, or
 * PostgreSQL's message for it.
 *
 * @example
 * ```ts
 * isDiskFull(Object.assign(new Error('could not extend file "base/5/16384": No space left on device'), { code: '53100' })); // true
 * ```
 */
export function isDiskFull(error: unknown): boolean {
  for (const cause of causes(error)) {
    if (cause instanceof DiskFullError) return true;
    const { code, message } = cause as { code?: unknown; message?: unknown };
    if (code === DISK_FULL_SQLSTATE || code === 'ENOSPC') return true;
    if (typeof message === 'string' && DISK_FULL_MESSAGES.some((text) => message.includes(text))) return true;
  }
  return false;
}

/**
 * Throws `error` as a {@link DiskFullError} when it says a disk is full, else as it is.
 *
 * @example
 * ```ts
 * await db.insertInto('sessions').values(row).execute().catch(throwAsDiskFull);
 * ```
 */
export function throwAsDiskFull(error: unknown): never {
  if (error instanceof DiskFullError || !isDiskFull(error)) throw error;
  throw new DiskFullError(`PostgreSQL's disk is full: ${(error as Error).message}`, { cause: error });
}

/** The error and its causes, outermost first. */
export function* causes(error: unknown): Generator<object> {
  const seen = new Set<unknown>();
  for (let at = error; typeof at === 'object' && at !== null && !seen.has(at); at = (at as { cause?: unknown }).cause) {
    seen.add(at);
    yield at;
  }
}
