import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { verifyEventChain } from '../../src/integrity/verify-event-chain.js';
import { EventStore } from '../../src/store/event-store.js';
import { pastTheTriggers } from '../support/past-the-triggers.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();

const changed = "its hash is not that of its stored text and the hash before it: the event was changed, moved or inserted";
const missing = 'it is missing: the event after it has no predecessor';
const noHead = 'the session has events but no head';

/** Each session's change past the triggers, and what verify names: its first seq affected and why. */
const cases: [sessionId: string, change: string, seq: number, problem: string][] = [
  ['untouched', '', -1, ''],
  ['headless', `DELETE FROM sessions WHERE session_id = 'headless'`, 0, noHead],
  ['headless-no-0', `DELETE FROM sessions WHERE session_id = 'headless-no-0'; DELETE FROM session_events WHERE session_id = 'headless-no-0' AND seq = 0`, 0, missing],
  ['headless-changed-0', `DELETE FROM sessions WHERE session_id = 'headless-changed-0'; ${changePayload('headless-changed-0', 0)}`, 0, changed],
  ['headless-changed-3', `DELETE FROM sessions WHERE session_id = 'headless-changed-3'; ${changePayload('headless-changed-3', 3)}`, 0, noHead],
  ['past-head', `UPDATE sessions SET last_seq = 3 WHERE session_id = 'past-head'`, 4, 'its log goes on past its head (seq 3) to seq 5'],
  ['changed-past-head', `UPDATE sessions SET last_seq = 2 WHERE session_id = 'changed-past-head'; ${changePayload('changed-past-head', 4)}`, 3, 'its log goes on past its head (seq 2) to seq 5'],
  ['behind-head', `UPDATE sessions SET last_seq = 8 WHERE session_id = 'behind-head'`, 6, 'its head is at seq 8 but its log ends at seq 5'],
  ['last-gone', `DELETE FROM session_events WHERE session_id = 'last-gone' AND seq = 5`, 5, 'its head is at seq 5 but its log ends at seq 4'],
  ['no-event', `DELETE FROM session_events WHERE session_id = 'no-event'`, 0, 'the session has a head but no event'],
  ['head-hash', `UPDATE sessions SET head_hash = '\\x00' WHERE session_id = 'head-hash'`, 6, 'its head hash is not the hash of its last event'],
  ['changed-0', changePayload('changed-0', 0), 0, changed],
  ['first-gone', `DELETE FROM session_events WHERE session_id = 'first-gone' AND seq = 0`, 0, missing],
  ['unchained', `UPDATE session_events SET hash = NULL WHERE session_id = 'unchained' AND seq >= 2`, 2, 'not chained yet: os-audit migrate chains the events stored before the chain'],
];

function changePayload(sessionId: string, seq: number): string {
  return `UPDATE session_events SET payload = '{"kind":"page_in","turn":${seq},"entry_count":3}' WHERE session_id = '${sessionId}' AND seq = ${seq}`;
}

describe('verifyEventChain', () => {
  it("names each session's first problem: a link, its head, or no head at all; over the whole log and over the sessions chosen", async () => {
    const store = new EventStore(testDb.db);
    for (const [sessionId] of cases) await store.append(sessionId, Array.from({ length: 6 }, (_, turn) => ({ kind: 'page_in', turn, entry_count: 2 })));
    await pastTheTriggers(testDb.db, async (trx) => {
      for (const [, change] of cases) for (const statement of change.split('; ').filter(Boolean)) await sql.raw(statement).execute(trx);
    });
    const expected = cases
      .filter(([, change]) => change !== '')
      .map(([sessionId, , seq, problem]) => ({ sessionId, seq, problem }))
      .sort((a, b) => (a.sessionId < b.sessionId ? -1 : 1));
    expect((await verifyEventChain(testDb.db)).problems).toEqual(expected);
    const chosen = ['headless', 'past-head', 'untouched'];
    expect(await verifyEventChain(testDb.db, { sessions: chosen })).toEqual({
      sessions: 2,
      events: 10,
      problems: expected.filter((problem) => chosen.includes(problem.sessionId)),
    });
  });
});
