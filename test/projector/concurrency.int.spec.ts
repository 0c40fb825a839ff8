import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { verifyOsSnapshots } from '../../src/deprecated-os-snapshot.js';
import { storeIsDistributed } from '../../src/db/distributed-store.js';
import { openDatabase } from '../../src/db/open-database.js';
import type { JsonValue } from '../../src/json/json-value.js';
import { readProjectionStatus } from '../../src/projector/projection-status.js';
import type { ProjectorEvent } from '../../src/projector/projector.js';
import { EventStore } from '../../src/store/event-store.js';
import { countEvents, foldedTotals, lastSeqsOffTheCheckpoint, pollUntil, readCheckpointRow, sessionsNotCaughtUp, sleep } from '../support/daemon-process.js';
import { sampleEvent } from '../support/log-files.js';
import { osSnapshotProjector } from '../support/projector-harness.js';
import { useTestDatabase } from '../support/test-database.js';

/**
 * Eight writers append to the same twenty sessions at once while a projector folds what they
 * commit: seqs are handed out by the store, so the writers of one session interleave, and
 * transactions commit out of position order. The projection must end up equal to the fold of
 * every log, each event folded once.
 */
const testDb = useTestDatabase();
/** Events per batch: ten times as many on Citus, whose batch costs a dozen distributed statements whatever its size, so that the projector keeps up with the writers within the test's time. */
let batchSize = 64;
beforeAll(async () => {
  if (await storeIsDistributed(testDb.db)) batchSize = 640;
});

const WRITERS = 8;
const SHARED_SESSIONS = 20;

/** mulberry32: a small seeded generator, so that a failing run can be told apart and repeated in spirit. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const events = (count: number, from: number, extra: Record<string, JsonValue> = {}) =>
  Array.from({ length: count }, (_, i) => ({ ...(sampleEvent(from + i) as Record<string, JsonValue>), ...extra }));

/** The seqs the store handed out, per session, as the writers saw them after their commits. */
class SeqLedger {
  readonly bySession = new Map<string, number[]>();
  record(sessionId: string, seqs: readonly number[]): void {
    const list = this.bySession.get(sessionId) ?? [];
    list.push(...seqs);
    this.bySession.set(sessionId, list);
  }
}

/**
 * Runs an in-process projector (its own connection pool, woken by NOTIFY) until `stop()`;
 * counts the batches it folds while `writing` is true, and collects anything that is not a
 * normal batch (retries, standby, halts).
 */
function startProjector(prefix: string) {
  const db = openDatabase({ connectionString: testDb.url, applicationName: `${prefix}-projector`, maxConnections: 3 });
  const state = { writing: true, batchesDuringWrites: 0, eventsDuringWrites: 0, problems: [] as string[] };
  const projector = osSnapshotProjector(db, {
    batchSize,
    owner: `${prefix}-projector`,
    listenUrl: testDb.url,
    onEvent: (event: ProjectorEvent) => {
      if (event.type === 'batch') {
        if (state.writing) {
          state.batchesDuringWrites += 1;
          state.eventsDuringWrites += event.result.eventsApplied;
        }
      } else if (event.type === 'retry' || event.type === 'standby') {
        state.problems.push(`${event.type}: ${'error' in event ? event.error.message : event.reason}`);
      } else if (event.type === 'sessions_stopped') {
        state.problems.push(`stopped: ${event.sessions.map((session) => session.problem).join('; ')}`);
      }
    },
  });
  const abort = new AbortController();
  const running = projector.run(abort.signal);
  return {
    state,
    async stop() {
      abort.abort();
      try {
        await running;
      } finally {
        await db.destroy();
      }
    },
  };
}

/** Waits until the checkpoint has passed every stored event (status: 0 behind); returns their count. Gives up at once if the projector halts. */
async function waitCaughtUp(projector: ReturnType<typeof startProjector>): Promise<number> {
  return pollUntil(
    'the projection to catch up',
    async () => {
      const stopped = projector.state.problems.filter((problem) => problem.startsWith('stopped'));
      if (stopped.length > 0) throw new Error(`the projector stopped sessions: ${stopped.join('; ')}`);
      const total = await countEvents(testDb.db);
      const status = await readProjectionStatus(testDb.db, 'os_snapshot');
      return status.behind.events === 0 ? total : undefined;
    },
    {
      timeoutMs: 60_000,
      intervalMs: 50,
      explain: async () => {
        const { behind, checkpoint, horizonHeldBy, lastError } = await readProjectionStatus(testDb.db, 'os_snapshot');
        const total = await countEvents(testDb.db);
        return JSON.stringify({ total, behind, eventsApplied: checkpoint.eventsApplied, horizonHeldBy, lastError, problems: projector.state.problems });
      },
    },
  );
}

/** Everything that must hold once writers are done and the projection has caught up. */
async function expectConsistent(ledger: SeqLedger, sessionIds: readonly string[]): Promise<void> {
  const total = await countEvents(testDb.db);

  // The store: each session's seqs as handed out are 0..last_seq, none twice, none missing.
  const heads = await new EventStore(testDb.db).lastSeqs(sessionIds);
  for (const [sessionId, seqs] of ledger.bySession) {
    const sorted = [...seqs].sort((a, b) => a - b);
    expect(sorted, sessionId).toEqual(Array.from({ length: sorted.length }, (_, i) => i));
    expect(heads.get(sessionId), sessionId).toBe(sorted.length - 1);
  }

  // The projection: every snapshot is the fold of its whole log, none pending, none behind.
  const report = await verifyOsSnapshots(testDb.db, { all: true });
  expect(report.mismatches).toEqual([]);
  expect(report.pending).toEqual([]);
  expect(report.checked).toBe((await testDb.db.selectFrom('sessions').select('session_id').execute()).length);
  expect(await sessionsNotCaughtUp(testDb.db)).toEqual([]);
  expect(await lastSeqsOffTheCheckpoint(testDb.db)).toEqual([]);
  // Each event folded exactly once: counters against the log, and the checkpoint's tally.
  const totals = await foldedTotals(testDb.db);
  expect(totals.snapshots).toEqual(totals.log);
  expect(totals.snapshots.events).toBe(total);
  expect((await readCheckpointRow(testDb.db)).events_applied).toBe(total);
}

describe('concurrent writers while a projector runs', () => {
  it('8 writers appending 1–20 events at a time to 20 shared sessions', async () => {
    const seed = Date.now() >>> 0;
    const sessionIds = Array.from({ length: SHARED_SESSIONS }, (_, i) => `shared-${String(i).padStart(2, '0')}`);
    const ledger = new SeqLedger();
    const projector = startProjector('plain');
    try {
      await Promise.all(
        Array.from({ length: WRITERS }, async (_, writer) => {
          const rnd = random(seed + writer);
          const store = new EventStore(testDb.db);
          for (let i = 0; i < 100; i += 1) {
            const sessionId = sessionIds[Math.floor(rnd() * sessionIds.length)]!;
            const count = 1 + Math.floor(rnd() * 20);
            ledger.record(sessionId, await store.append(sessionId, events(count, writer * 1000 + i)));
          }
        }),
      );
      projector.state.writing = false;
      const total = await waitCaughtUp(projector);
      expect(total).toBeGreaterThanOrEqual(WRITERS * 100);
    } finally {
      await projector.stop();
    }

    expect(projector.state.problems, `seed ${seed}`).toEqual([]);
    // The projector really ran next to the writers, not only after them.
    expect(projector.state.batchesDuringWrites, `seed ${seed}`).toBeGreaterThan(0);
    await expectConsistent(ledger, sessionIds);
  }, 120_000);

  it('with slow transactions committing out of position order, and one rolled back on purpose', async () => {
    const seed = (Date.now() ^ 0x5eed) >>> 0;
    const sessionIds = Array.from({ length: SHARED_SESSIONS }, (_, i) => `slow-${String(i).padStart(2, '0')}`);
    const ledger = new SeqLedger();
    const rollbackSession = 'slow-rolled-back-new';
    const startedEvents = await countEvents(testDb.db);
    let slowCommitted = 0;
    let rolledBack = 0;
    const projector = startProjector('slow');
    try {
      await Promise.all(
        Array.from({ length: WRITERS }, async (_, writer) => {
          const rnd = random(seed + writer);
          const store = new EventStore(testDb.db);
          for (let i = 0; i < 60; i += 1) {
            const pick = () => sessionIds[Math.floor(rnd() * sessionIds.length)]!;
            const count = () => 1 + Math.floor(rnd() * 20);
            if (writer >= 4 || i % 10 !== 5) {
              const sessionId = pick();
              ledger.record(sessionId, await store.append(sessionId, events(count(), writer * 1000 + i)));
              continue;
            }
            // A slow transaction: one shared session, a pause in which others append and
            // commit, then another shared session (locks taken in name order: no deadlock),
            // and every other time a session of its own. Writer 0's first one rolls back.
            let [first, second] = [pick(), pick()];
            while (second === first) second = pick();
            if (second < first) [first, second] = [second, first];
            const own = i % 20 === 5 ? `slow-own-${writer}-${i}` : undefined;
            const rollBack = writer === 0 && i === 5;
            const extra: Record<string, JsonValue> = rollBack ? { test_marker: 'rolled-back' } : {};
            const got: [string, number[]][] = [];
            try {
              await store.transaction(async (tx) => {
                got.push([first, await tx.append(first, events(count(), writer * 1000 + i, extra))]);
                await sleep(300);
                got.push([second, await tx.append(second, events(count(), writer * 1000 + i, extra))]);
                if (rollBack) {
                  await tx.append(rollbackSession, events(5, 0, extra));
                  throw new Error('rolled back on purpose');
                }
                if (own) got.push([own, await tx.append(own, events(count(), writer * 1000 + i))]);
              });
              for (const [sessionId, seqs] of got) ledger.record(sessionId, seqs);
              slowCommitted += 1;
            } catch (error) {
              if (!rollBack || (error as Error).message !== 'rolled back on purpose') throw error;
              rolledBack += 1;
            }
          }
        }),
      );
      projector.state.writing = false;
      await waitCaughtUp(projector);
    } finally {
      await projector.stop();
    }

    expect(projector.state.problems, `seed ${seed}`).toEqual([]);
    expect(projector.state.batchesDuringWrites, `seed ${seed}`).toBeGreaterThan(0);
    expect({ slowCommitted, rolledBack }).toEqual({ slowCommitted: 4 * 6 - 1, rolledBack: 1 });

    // The rolled-back transaction left nothing: no events, no session head, no snapshot.
    const marked = await sql<{ n: number }>`
      SELECT count(*)::bigint AS n FROM session_events WHERE payload ->> 'test_marker' = 'rolled-back'`.execute(testDb.db);
    expect(Number(marked.rows[0]!.n)).toBe(0);
    expect(await testDb.db.selectFrom('sessions').select('session_id').where('session_id', '=', rollbackSession).execute()).toEqual([]);
    expect(await testDb.db.selectFrom('os_snapshots').select('session_id').where('session_id', '=', rollbackSession).execute()).toEqual([]);

    // The interleaving this test is about did happen: in some session, a later seq was written
    // by an older transaction (a slow one) than an earlier seq, so that reading in
    // (transaction, position) order meets that session's events out of seq order.
    const inversions = await sql<{ n: number }>`
      SELECT count(*)::bigint AS n
      FROM session_events a JOIN session_events b ON a.session_id = b.session_id AND a.seq < b.seq
      WHERE a.transaction_id > b.transaction_id AND a.session_id LIKE 'slow-%'`.execute(testDb.db);
    expect(Number(inversions.rows[0]!.n), `seed ${seed}`).toBeGreaterThan(0);

    expect(await countEvents(testDb.db)).toBeGreaterThan(startedEvents);
    await expectConsistent(ledger, [...ledger.bySession.keys()]);
  }, 120_000);
});
