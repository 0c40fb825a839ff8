/** Where a page of the session list ends: the last row's activity time (exact, as PostgreSQL's text) and id. */
export interface SessionCursor {
  lastRecordedAt: string;
  sessionId: string;
}

/** A `timestamptz` as PostgreSQL writes it in its ISO style: what the list query selects as text and casts back. */
const POSTGRES_TIMESTAMPTZ = /^\d{4,}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,6})?[+-]\d\d(:\d\d){0,2}$/;

/**
 * The cursor as a URL-safe token, for the `after` parameter of the next page's link.
 *
 * @example
 * ```ts
 * encodeSessionCursor({ lastRecordedAt: '2026-12-04 09:00:00.123456+00', sessionId: 's-1' }); // 'WyIyMDI2…'
 * ```
 */
export function encodeSessionCursor(cursor: SessionCursor): string {
  return Buffer.from(JSON.stringify([cursor.lastRecordedAt, cursor.sessionId]), 'utf8').toString('base64url');
}

/**
 * Reads back a token of {@link encodeSessionCursor}; undefined when it is not one.
 *
 * @example
 * ```ts
 * decodeSessionCursor(encodeSessionCursor(cursor)); // cursor
 * decodeSessionCursor('garbage'); // undefined
 * ```
 */
export function decodeSessionCursor(token: string): SessionCursor | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (!Array.isArray(value) || value.length !== 2 || typeof value[0] !== 'string' || typeof value[1] !== 'string') return undefined;
    if (!POSTGRES_TIMESTAMPTZ.test(value[0])) return undefined;
    return { lastRecordedAt: value[0], sessionId: value[1] };
  } catch {
    return undefined;
  }
}
