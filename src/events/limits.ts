import { parseWholeNumber } from '../json/whole-number.js';

/**
 * Bounds on one unit of input, so that hostile or broken input fails with a clear error
 * instead of exhausting memory or the database's limits.
 *
 * @example
 * ```ts
 * await store.append('s1', events, { maxEventBytes: 1024 * 1024, maxSessionIdBytes: 128 });
 * ```
 */
export interface Limits {
  /** Bytes of one event's JSON text (UTF-8, as written); default {@link DEFAULT_MAX_EVENT_BYTES}. */
  maxEventBytes?: number;
  /** Bytes of a session id (UTF-8); default {@link DEFAULT_MAX_SESSION_ID_BYTES}. */
  maxSessionIdBytes?: number;
}

/**
 * 64 MiB: far under PostgreSQL's 1 GB for one `json` value and one protocol message. Reading
 * and encoding one event takes a few times its size in memory (its line, its string, its parsed
 * value, the text sent): a few hundred MiB at worst.
 */
export const DEFAULT_MAX_EVENT_BYTES = 64 * 2 ** 20;

/**
 * 1024 bytes: a session id is a key of btree indexes, whose entries PostgreSQL limits to about
 * 2700 bytes, some of them beside a second text column (`os_processes`' agent id).
 */
export const DEFAULT_MAX_SESSION_ID_BYTES = 1024;

/**
 * The bytes a line of a log file may hold: the event and its envelope (`session_id`, `seq` and
 * white space), so that the event's own limit is the one that refuses it with its session named.
 */
export function maxLineBytes(limits: Limits): number {
  return maxEventBytesOf(limits) + 6 * maxSessionIdBytesOf(limits) + ENVELOPE_BYTES;
}

/** Room for a line's envelope beyond its event and session id (escaped: 6 bytes a byte at most). */
const ENVELOPE_BYTES = 64 * 1024;

export function maxEventBytesOf(limits: Limits): number {
  return limits.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
}

export function maxSessionIdBytesOf(limits: Limits): number {
  return limits.maxSessionIdBytes ?? DEFAULT_MAX_SESSION_ID_BYTES;
}

/** Where a refusal tells how to raise the event size limit. */
export const EVENT_LIMIT_HINT = 'the limit is maxEventBytes, --max-event-bytes or OS_AUDIT_MAX_EVENT_BYTES';

/**
 * Why an event of `bytes` bytes is refused, or undefined when it is within the limit.
 *
 * @example
 * ```ts
 * eventTooLarge(70_000_000, {}); // 'the event is 70000000 bytes, more than 67108864 (the limit is …)'
 * ```
 */
export function eventTooLarge(bytes: number, limits: Limits): string | undefined {
  const max = maxEventBytesOf(limits);
  return bytes > max ? `the event is ${bytes} bytes, more than ${max} (${EVENT_LIMIT_HINT})` : undefined;
}

/** The environment variables that set the limits of the command line (its flags win). */
export const LIMIT_VARIABLES = {
  maxEventBytes: 'OS_AUDIT_MAX_EVENT_BYTES',
  maxSessionIdBytes: 'OS_AUDIT_MAX_SESSION_ID_BYTES',
} as const;

/**
 * The limits set by the environment; a variable that is not a whole number from 1 is an error
 * naming it.
 *
 * @example
 * ```ts
 * limitsFromEnv({ OS_AUDIT_MAX_EVENT_BYTES: '1048576' }); // { maxEventBytes: 1048576 }
 * ```
 */
export function limitsFromEnv(env: NodeJS.ProcessEnv): Limits {
  const limits: Limits = {};
  for (const [key, variable] of Object.entries(LIMIT_VARIABLES) as [keyof Limits, string][]) {
    const text = env[variable];
    if (text === undefined || text === '') continue;
    const value = parseWholeNumber(text);
    if (value === undefined || value < 1) throw new RangeError(`${variable} must be a whole number of bytes from 1, got ${JSON.stringify(text)}`);
    limits[key] = value;
  }
  return limits;
}
