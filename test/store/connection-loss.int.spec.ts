import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConnectionLostError,
  EventStore,
  type JsonObject,
  openDatabase,
  PostgresSessionLog,
} from '../../src/index.js';
import { startCuttingProxy } from '../support/cutting-proxy.js';
import { onCitus, useTestDatabase } from '../support/test-database.js';

/** Appends ride through lost connections: acknowledged ones stored exactly once, the others not at all. */
const testDb = useTestDatabase();
const VICTIM = 'os-audit-connection-loss-victim';

/** Terminates the victim's connections every few milliseconds until stopped; tells how many so far, and in all once stopped. */
function killRepeatedly(everyMs: () => number): { killed: () => number; stop: () => Promise<number> } {
  let stopped = false;
  let killed = 0;
  const loop = (async () => {
    while (!stopped) {
      const { rows } = await sql<{ killed: number }>`
        SELECT count(pg_terminate_backend(pid))::int AS killed FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = ${VICTIM}`.execute(testDb.db);
      killed += rows[0]!.killed;
      await new Promise((resolve) => setTimeout(resolve, everyMs()));
    }
  })();
  return {
    killed: () => killed,
    stop: async () => {
      stopped = true;
      await loop;
      return killed;
    },
  };
}

/** Writers go on past their minimum until this many connections were killed under them. */
const KILLS = 10;

/**
 * How long between two kills. On Citus a new connection takes 100-200 ms on these machines
 * before its first append commits (the new backend loads Citus's metadata and connects to the
 * worker): killed every 40-160 ms, as on one server, hardly an attempt could finish and the
 * writers would run out of retry time. The kills still land in every phase of an append.
 */
const killEvery = (): number => (onCitus ? 250 + Math.random() * 350 : 40 + Math.random() * 120);

/** Each session's stored events as `turn:entry_count` markers, in seq order, with the seqs contiguous from 0. */
async function storedMarkers(sessionIds: readonly string[]): Promise<Map<string, string[]>> {
  const rows = await testDb.db
    .selectFrom('session_events')
    .select(['session_id', 'seq', 'payload'])
    .where('session_id', 'in', [...sessionIds])
    .orderBy('session_id')
    .orderBy('seq')
    .execute();
  const markers = new Map<string, string[]>(sessionIds.map((id) => [id, []]));
  for (const row of rows) {
    const list = markers.get(row.session_id)!;
    expect(row.seq).toBe(list.length);
    const event = row.payload as JsonObject;
    list.push(`${event.turn}:${event.entry_count}`);
  }
  return markers;
}

const marked = (writer: number, index: number): JsonObject => ({ kind: 'page_in', turn: writer, entry_count: index });

describe('appends while connections are killed', () => {
  let victim: ReturnType<typeof openDatabase>;
  beforeAll(() => {
    victim = openDatabase({ connectionString: testDb.url, applicationName: VICTIM, maxConnections: 4 });
  });
  afterAll(async () => {
    await victim.destroy();
  });

  it('EventStore.append at the head: every append is acknowledged, and stored exactly once at the seqs it was given', async () => {
    const store = new EventStore(victim, { connectionRetry: { retryForMs: 30_000, initialDelayMs: 5 } });
    const killer = killRepeatedly(killEvery);
    const sessions = ['kill-head-a', 'kill-head-b'];
    const expected = new Map<string, Map<number, string>>(sessions.map((id) => [id, new Map()]));
    await Promise.all(
      [1, 2, 3, 4].map(async (writer) => {
        for (let append = 0; append < 40 || killer.killed() < KILLS; append += 1) {
          const sessionId = sessions[(writer + append) % 2]!;
          // Mostly small appends (one statement), now and then one past 250 events (COPY).
          const count = append % 10 === 9 ? 300 : 1 + (append % 5);
          const events = Array.from({ length: count }, (_, index) => marked(writer, append * 1000 + index));
          const seqs = await store.append(sessionId, events);
          seqs.forEach((seq, index) => expected.get(sessionId)!.set(seq, `${writer}:${append * 1000 + index}`));
        }
      }),
    );
    expect(await killer.stop()).toBeGreaterThanOrEqual(KILLS);
    const stored = await storedMarkers(sessions);
    for (const sessionId of sessions) {
      const want = expected.get(sessionId)!;
      expect(stored.get(sessionId)!.length).toBe(want.size);
      expect(stored.get(sessionId)).toEqual([...want.keys()].sort((a, b) => a - b).map((seq) => want.get(seq)));
    }
  });

  it('EventStore.append with expectedSeq and PostgresSessionLog: acknowledged once each, in call order', async () => {
    const store = new EventStore(victim, { connectionRetry: { retryForMs: 30_000, initialDelayMs: 5 } });
    const log = new PostgresSessionLog(victim, { connectionRetry: { retryForMs: 30_000, initialDelayMs: 5 } });
    const killer = killRepeatedly(killEvery);
    const [expectedAppends, rounds] = await Promise.all([
      (async () => {
        let index = 0;
        for (; index < 150 || killer.killed() < KILLS; index += 1) await store.append('kill-expected', [marked(1, index)], { expectedSeq: index - 1 });
        return index;
      })(),
      (async () => {
        let round = 0;
        for (; round < 50 || killer.killed() < KILLS; round += 1) {
          const seqs = await Promise.all([0, 1, 2].map((offset) => log.append('kill-log', marked(2, round * 3 + offset))));
          expect(seqs).toEqual([round * 3, round * 3 + 1, round * 3 + 2]);
        }
        return round;
      })(),
    ]);
    expect(await killer.stop()).toBeGreaterThanOrEqual(KILLS);
    const stored = await storedMarkers(['kill-expected', 'kill-log']);
    expect(stored.get('kill-expected')).toEqual(Array.from({ length: expectedAppends }, (_, index) => `1:${index}`));
    expect(stored.get('kill-log')).toEqual(Array.from({ length: rounds * 3 }, (_, index) => `2:${index}`));
  });

  it('the kernel journal: a chain of compare-and-appends is stored whole, each record once', async () => {
    const log = new PostgresSessionLog(victim, { connectionRetry: { retryForMs: 30_000, initialDelayMs: 5 } });
    const killer = killRepeatedly(killEvery);
    let head: string | undefined;
    let step = 0;
    for (; step < 60 || killer.killed() < KILLS; step += 1) {
      const digest = `digest-${step}`.padEnd(64, '0');
      const receipt = await log.kernelJournal.compareAndAppend('kill-journal', head, { step_seq: step, record_digest: digest, record_bytes: new Uint8Array([step]) });
      expect(receipt).toEqual({ step_seq: step, record_digest: digest });
      head = digest;
    }
    expect(await killer.stop()).toBeGreaterThanOrEqual(KILLS);
    const { rows } = await sql<{ count: number }>`SELECT count(*)::int AS count FROM kernel_journal_records WHERE operation_id = 'kill-journal'`.execute(testDb.db);
    expect(rows[0]!.count).toBe(step);
  });
});

describe('an append whose commit answer is lost', () => {
  it('is acknowledged, and not stored again, when the commit happened', async () => {
    const proxy = await startCuttingProxy(testDb.url);
    const db = openDatabase({ connectionString: proxy.url, maxConnections: 2 });
    try {
      const store = new EventStore(db, { connectionRetry: { retryForMs: 10_000, initialDelayMs: 5 } });
      const cut = proxy.cutAfterAnswerTo('COMMIT');
      const seqs = await store.append('commit-answer-lost', [marked(7, 0), marked(7, 1)]);
      await cut;
      expect(seqs).toEqual([0, 1]);
      expect((await storedMarkers(['commit-answer-lost'])).get('commit-answer-lost')).toEqual(['7:0', '7:1']);
      // The store goes on over a new connection.
      expect(await store.append('commit-answer-lost', [marked(7, 2)])).toEqual([2]);
    } finally {
      await db.destroy();
      await proxy.close();
    }
  });

  it('gives up with a retryable ConnectionLostError saying nothing is stored when the server stays unreachable', async () => {
    const url = new URL(testDb.url);
    url.port = '1';
    const db = openDatabase({ connectionString: url.toString(), maxConnections: 1 });
    try {
      const store = new EventStore(db, { connectionRetry: { retryForMs: 300, initialDelayMs: 20 } });
      const failure = await store.append('never-reached', [marked(1, 1)]).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(ConnectionLostError);
      expect(failure).toMatchObject({ retryable: true, stored: false });
      expect((failure as Error).message).toMatch(/nothing of it is stored/);
    } finally {
      await db.destroy();
    }
  });
});
