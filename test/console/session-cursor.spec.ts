import { describe, expect, it } from 'vitest';
import { decodeSessionCursor, encodeSessionCursor } from '../../src/console/session-cursor.js';

describe('the session list cursor', () => {
  it('round-trips the exact activity time and any session id in a URL-safe token', () => {
    const cursor = { lastRecordedAt: '2026-12-04 09:00:00.123456+00', sessionId: 'a/b?c=d&e "é"' };
    const token = encodeSessionCursor(cursor);
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeSessionCursor(token)).toEqual(cursor);
    expect(decodeSessionCursor(encodeSessionCursor({ lastRecordedAt: '2026-12-04 09:00:00-05:30', sessionId: 's' }))?.lastRecordedAt).toBe('2026-12-04 09:00:00-05:30');
  });

  it('refuses what it did not write', () => {
    for (const token of ['garbage', '', Buffer.from('[1,2]').toString('base64url'), Buffer.from('["yesterday","s"]').toString('base64url'), Buffer.from('["2026-12-04 09:00:00+00"]').toString('base64url')]) {
      expect(decodeSessionCursor(token), token).toBeUndefined();
    }
  });
});
