/**
 * SQLSTATEs of a connection that is gone or cannot be had yet: class 08 (connection
 * exception), the server shutting down or starting up (57P01-57P03, 57P05 idle session
 * timeout) and too many connections (53300). A constraint or data error is never one of them.
 */
const CONNECTION_SQLSTATES = new Set(['57P01', '57P02', '57P03', '57P05', '53300']);

/** Errors of Node's sockets that mean the server is unreachable or the connection broke. */
const SOCKET_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTCONN', 'ECONNABORTED']);

/** What node-postgres says when the socket closed under a query, or a client is unusable after it. */
const DRIVER_MESSAGES = [
  'Connection terminated',
  'connection timeout',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'the database system is',
  'terminating connection',
];

/**
 * Whether `error` means the connection to PostgreSQL was lost or could not be made: the work
 * may be tried again on a new connection. A statement the server refused (a constraint, bad
 * data, a permission) is not one: trying it again would fail the same way.
 *
 * @example
 * ```ts
 * try { await db.selectFrom('sessions').selectAll().execute(); }
 * catch (error) { if (isConnectionLoss(error)) scheduleRetry(); else throw error; }
 * ```
 */
export function isConnectionLoss(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error instanceof ConnectionLostError) return error.retryable;
  const { code } = error as { code?: unknown };
  if (typeof code === 'string') {
    if (code.startsWith('08') || CONNECTION_SQLSTATES.has(code) || SOCKET_ERRNOS.has(code)) return true;
    // Any other SQLSTATE is the server's answer to the statement.
    if (/^[0-9A-Z]{5}$/.test(code)) return false;
  }
  if (DRIVER_MESSAGES.some((message) => error.message.includes(message))) return true;
  const { cause } = error as { cause?: unknown };
  return cause !== undefined && cause !== error && isConnectionLoss(cause);
}

/**
 * Work that failed because the connection to PostgreSQL was lost and could not be made again
 * within its retry time. `stored` tells what became of a write: `false`, nothing of it is
 * stored (it can be tried again as it is); `'unknown'` when that could not be learned.
 *
 * @example
 * ```ts
 * try { await log.append('session-1', event); }
 * catch (error) { if (error instanceof ConnectionLostError && error.stored === false) await later(() => log.append('session-1', event)); }
 * ```
 */
export class ConnectionLostError extends Error {
  /** Whether the same work may simply go again once the database is back: not when a write's outcome is unknown. */
  readonly retryable: boolean;

  constructor(
    message: string,
    readonly stored: false | 'unknown' | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ConnectionLostError';
    this.retryable = stored !== 'unknown';
  }
}
