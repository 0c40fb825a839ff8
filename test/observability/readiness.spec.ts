import { describe, expect, it } from 'vitest';
import { Readiness } from '../../src/observability/readiness.js';
import type { ProjectorEvent } from '../../src/projector/projector.js';

const checkpoint = { transactionId: '1', position: 1 };
const batch: ProjectorEvent = {
  type: 'batch',
  result: { windowCount: 1, eventsApplied: 1, skipped: 0, stoppedCount: 0, stopped: [], resumedCount: 0, checkpoint },
  durationMs: 3,
};
const stopped: ProjectorEvent = {
  type: 'sessions_stopped',
  sessions: [{ session_id: 's', seq: 9, position: 90, kind: 'resumed', reason: 'unreadable', problem: 'field "turn": missing or null' }],
  count: 1,
};

/** A readiness on a clock the test moves; stale after 15 s (three 5 s lease TTLs). */
function readinessAt(start = 1_000_000) {
  let now = start;
  const readiness = new Readiness({ staleAfterMs: 15_000, now: () => now });
  return { readiness, advance: (ms: number) => (now += ms) };
}

describe('Readiness', () => {
  it('is not ready until the daemon has reached the database, then ready as a standby or a leader', () => {
    const { readiness } = readinessAt();
    expect(readiness.check()).toEqual({ ready: false, role: 'starting', reason: 'starting: not connected to the database yet' });
    readiness.recordStatusRead(new Error('connect ECONNREFUSED 127.0.0.1:5432'));
    expect(readiness.check().reason).toBe('starting: not connected to the database yet: connect ECONNREFUSED 127.0.0.1:5432');
    readiness.recordStatusRead();
    expect(readiness.check()).toEqual({ ready: true, role: 'standby' });
    readiness.record({ type: 'leader', owner: 'o', epoch: 1 });
    expect(readiness.check()).toEqual({ ready: true, role: 'leader' });
    readiness.record({ type: 'standby', owner: 'o', reason: 'lease lost' });
    expect(readiness.check()).toEqual({ ready: true, role: 'standby' });
  });

  it('fails when the projector stops coming round its loop, though the database still answers', () => {
    const { readiness, advance } = readinessAt();
    readiness.record({ type: 'leader', owner: 'o', epoch: 1 });
    for (let second = 0; second < 15; second++) {
      advance(1000);
      readiness.recordStatusRead();
      readiness.record({ type: 'idle', role: 'leader' });
    }
    expect(readiness.check()).toEqual({ ready: true, role: 'leader' });
    for (let second = 0; second < 16; second++) {
      advance(1000);
      readiness.recordStatusRead();
    }
    expect(readiness.check()).toEqual({ ready: false, role: 'leader', reason: 'the projector has not come round its loop for 16 s' });
    readiness.record(batch);
    expect(readiness.check().ready).toBe(true);
  });

  it('fails once the database has not been reached for longer than the window', () => {
    const { readiness, advance } = readinessAt();
    readiness.record({ type: 'leader', owner: 'o', epoch: 1 });
    advance(15_000);
    expect(readiness.check().ready).toBe(true);
    readiness.recordStatusRead(new Error('canceling statement due to statement timeout'));
    advance(1);
    expect(readiness.check()).toEqual({ ready: false, role: 'leader', reason: 'no contact with the database for 15 s: canceling statement due to statement timeout' });
    readiness.record(batch);
    expect(readiness.check().ready).toBe(true);
  });

  it('fails at once while the database is unreachable, from a status read or the projector, until it answers again', () => {
    const { readiness } = readinessAt();
    readiness.record({ type: 'leader', owner: 'o', epoch: 1 });
    readiness.recordStatusRead(new Error('Connection terminated unexpectedly'));
    expect(readiness.check()).toEqual({ ready: false, role: 'leader', reason: 'the database is unreachable (retrying): Connection terminated unexpectedly' });
    readiness.recordStatusRead();
    expect(readiness.check().ready).toBe(true);
    readiness.record({ type: 'database', reachable: false, error: new Error('connect ECONNREFUSED 127.0.0.1:5432') });
    expect(readiness.check()).toEqual({ ready: false, role: 'leader', reason: 'the database is unreachable (retrying): connect ECONNREFUSED 127.0.0.1:5432' });
    readiness.record({ type: 'database', reachable: true });
    expect(readiness.check().ready).toBe(true);
  });

  it('stays ready when a batch stops a session: every other session goes on', () => {
    const { readiness } = readinessAt();
    readiness.record({ type: 'leader', owner: 'o', epoch: 1 });
    readiness.record(batch);
    readiness.record(stopped);
    expect(readiness.check()).toEqual({ ready: true, role: 'leader' });
  });

  it('fails while the projector retries after an error, until its next attempt has had time to fail again', () => {
    const { readiness, advance } = readinessAt();
    readiness.record({ type: 'leader', owner: 'o', epoch: 1 });
    readiness.record({ type: 'retry', error: new Error('connect ECONNREFUSED'), delayMs: 2000 });
    readiness.recordStatusRead();
    expect(readiness.check()).toEqual({ ready: false, role: 'leader', reason: 'retrying after an error (next attempt after 2000 ms): connect ECONNREFUSED' });
    advance(2000 + 15_000 - 1);
    readiness.recordStatusRead();
    expect(readiness.check().ready).toBe(false);
    advance(1);
    // No new error, but no round of the loop either: the attempt hangs.
    expect(readiness.check()).toEqual({ ready: false, role: 'leader', reason: 'the projector has not come round its loop for 17 s' });
    readiness.record({ type: 'idle', role: 'leader' });
    expect(readiness.check().ready).toBe(true);
    // A batch proves the retry worked at once.
    readiness.record({ type: 'retry', error: new Error('again'), delayMs: 4000 });
    readiness.record(batch);
    expect(readiness.check().ready).toBe(true);
    // The append listener reconnecting (delay 0) does not count: polling carries on.
    readiness.record({ type: 'retry', error: new Error('listener dropped'), delayMs: 0 });
    expect(readiness.check().ready).toBe(true);
  });

  it('fails from the moment the daemon is stopping', () => {
    const { readiness } = readinessAt();
    readiness.record({ type: 'leader', owner: 'o', epoch: 1 });
    readiness.stopping();
    expect(readiness.check()).toEqual({ ready: false, role: 'stopping', reason: 'the daemon is stopping' });
  });
});
