import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import {
  InvalidEventError,
  type JsonObject,
  JsonFloat,
  KERNEL_PRIMITIVES_V0_2_36,
  type KernelPrimitive,
  parseJson,
  PostgresSessionLog,
  type SessionLog,
} from '../../src/index.js';
import { useTestDatabase } from '../support/test-database.js';

/** The SDKs' `SessionLog` semantics, against a real PostgreSQL. */
const testDb = useTestDatabase();
const sessionLog = () => new PostgresSessionLog(testDb.db);

const pageIn = (turn: number): JsonObject => ({ kind: 'page_in', turn, entry_count: 1 });
const range = (count: number) => Array.from({ length: count }, (_, i) => i);

describe('the SessionLog interface', () => {
  it('is what PostgresSessionLog implements', () => {
    const log: SessionLog = sessionLog();
    expect(typeof log.append).toBe('function');
  });

  it('reads an unknown session as empty: latestSeq -1, read []', async () => {
    expect(await sessionLog().latestSeq('never-written')).toBe(-1);
    expect(await sessionLog().read('never-written')).toEqual([]);
    expect(await sessionLog().read('never-written', 3)).toEqual([]);
  });

  it('gives appends the seqs 0, 1, 2, … and latestSeq follows', async () => {
    const log = sessionLog();
    expect(await log.append('counting', pageIn(1))).toBe(0);
    expect(await log.latestSeq('counting')).toBe(0);
    expect(await log.append('counting', pageIn(2))).toBe(1);
    expect(await log.append('counting', pageIn(3))).toBe(2);
    expect(await log.latestSeq('counting')).toBe(2);
    expect(await log.read('counting')).toEqual([
      { seq: 0, event: pageIn(1) },
      { seq: 1, event: pageIn(2) },
      { seq: 2, event: pageIn(3) },
    ]);
  });

  it('reads from fromSeq on, [] past the end, everything for a negative fromSeq', async () => {
    const log = sessionLog();
    for (const turn of range(5)) await log.append('slices', pageIn(turn));
    const seqs = async (fromSeq?: number) => (await log.read('slices', fromSeq)).map((entry) => entry.seq);
    expect(await seqs()).toEqual([0, 1, 2, 3, 4]);
    expect(await seqs(0)).toEqual([0, 1, 2, 3, 4]);
    expect(await seqs(3)).toEqual([3, 4]);
    expect(await seqs(4)).toEqual([4]);
    expect(await seqs(5)).toEqual([]);
    expect(await seqs(1000)).toEqual([]);
    expect(await seqs(-2)).toEqual([0, 1, 2, 3, 4]);
    expect((await log.read('slices', 3))[0]!.event).toEqual(pageIn(3));
    await expect(log.read('slices', 1.5)).rejects.toThrow(RangeError);
  });

  it("gives events back as JSON.parse gives what JSON.stringify wrote, keys in written order, as the SDKs' FileSessionLog does", async () => {
    const log = sessionLog();
    const written = { kind: 'tool_completed', turn: 1, z_last: 'a\u0000b', results: [{ call_id: 'c1', output: 'ok', score: 1.5 }], skipped: undefined, nan: Number.NaN };
    await log.append('plain', written);
    const [entry] = await log.read('plain');
    expect(entry).toEqual({ seq: 0, event: JSON.parse(JSON.stringify(written)) });
    expect(Object.keys(entry!.event)).toEqual(['kind', 'turn', 'z_last', 'results', 'nan']);
    expect(entry!.event.nan).toBeNull();
    expect(Object.getPrototypeOf(entry!.event)).toBe(Object.prototype);
  });

  it('gives events back exactly with values: exact: u64 max as bigint, U+0000 in text, floats, unknown kinds and extra fields', async () => {
    const events = parseJson(
      '[{"kind":"run_terminal","reason":"done","turns_used":4294967295,"total_tokens":18446744073709551615},' +
        '{"kind":"tool_completed","turn":1,"results":[{"call_id":"c1","output":"a\\u0000b"}],"x_extra":{"cost":1.50}},' +
        '{"kind":"workflow_completed","turn":7,"node_outcomes":[],"anything":[true,null,{"deep":"\\u0000"}]}]',
    ) as JsonObject[];
    const log = new PostgresSessionLog(testDb.db, { values: 'exact' });
    for (const event of events) await log.append('exact', event);
    const read = await log.read('exact');
    expect(read).toEqual(events.map((event, seq) => ({ seq, event })));
    expect(read[0]!.event.total_tokens).toBe(18446744073709551615n);
    expect((read[1]!.event.results as JsonObject[])[0]!.output).toBe('a\u0000b');
    expect((read[1]!.event.x_extra as JsonObject).cost).toBeInstanceOf(JsonFloat);
    expect(read[2]!.event.kind).toBe('workflow_completed');
  });

  it('stores what JSON.stringify writes with values: exact too, and the exact values its reads give exactly', async () => {
    const log = new PostgresSessionLog(testDb.db, { values: 'exact' });
    const written = { kind: 'tool_completed', turn: 1, at: new Date(Date.UTC(2024, 0, 2)), scores: [1, Number.NaN, undefined, Number.POSITIVE_INFINITY], skipped: undefined };
    await log.append('exact-writes', written);
    const [read] = parseJson('[{"kind":"run_terminal","reason":"done","turns_used":1,"total_tokens":18446744073709551615,"cost":1.50,"zero":-0}]') as JsonObject[];
    await log.append('exact-writes', read!);
    await log.append('exact-writes', (await log.read('exact-writes', 1))[0]!.event);
    const texts = [];
    for await (const { text } of log.store.readSessionText('exact-writes')) texts.push(text);
    expect(texts).toEqual([
      JSON.stringify(written),
      '{"kind":"run_terminal","reason":"done","turns_used":1,"total_tokens":18446744073709551615,"cost":1.50,"zero":-0}',
      '{"kind":"run_terminal","reason":"done","turns_used":1,"total_tokens":18446744073709551615,"cost":1.50,"zero":-0}',
    ]);
    expect(texts[0]).toBe('{"kind":"tool_completed","turn":1,"at":"2024-01-02T00:00:00.000Z","scores":[1,null,null,null]}');
  });

  it('stores any object with a non-empty string kind, and rejects anything else naming the session, storing nothing', async () => {
    const log = sessionLog();
    // Shapes the SDKs write that the Rust core's contract does not: stored as they are.
    expect(await log.append('invalid', { kind: 'llm_completed', turn: 0, content: 'ok', tool_calls: [] })).toBe(0);
    expect(await log.append('invalid', { kind: 'suspended', turn: -1, reason: 'ask\u0000user' })).toBe(1);
    await expect(log.append('invalid', { turn: 3 })).rejects.toThrow(/session "invalid": field "kind": required field is missing/);
    await expect(log.append('invalid', { kind: '' })).rejects.toBeInstanceOf(InvalidEventError);
    await expect(log.append('invalid', [1, 2] as never)).rejects.toThrow(/session "invalid": the event: expected an object, got an array/);
    expect(await log.latestSeq('invalid')).toBe(1);
  });

  it('takes the kind from the text it stores: a kind JSON.stringify does not write is refused before anything is sent', async () => {
    const log = sessionLog();
    class Gated {
      turn = 1;
      get kind() {
        return 'tool_gated';
      }
    }
    await expect(log.append('kind-of-text', new Gated())).rejects.toThrow(/^session "kind-of-text": field "kind": required field is missing$/);
    let calls = 0;
    const shifting = Object.defineProperty({ turn: 2 }, 'kind', { get: () => (calls++ === 0 ? 'page_in' : 'page_out'), enumerable: true });
    expect(await log.append('kind-of-text', shifting)).toBe(0);
    // The kind column (which the primitive filter reads) is the stored text's.
    expect(await log.read('kind-of-text', 0, 'mm')).toEqual([{ seq: 0, event: { turn: 2, kind: 'page_in' } }]);
  });

  it('takes seqs in call order for appends started together, as the SDK classes do', async () => {
    const log = sessionLog();
    const seqs = await Promise.all(range(20).map((turn) => log.append('together', { kind: 'llm_completed', turn, content: String(turn), tool_calls: [] })));
    expect(seqs).toEqual(range(20));
    expect((await log.read('together')).map((entry) => entry.event.turn)).toEqual(range(20));
    // A refused event fails its own call only; the others keep their order.
    const mixed = await Promise.allSettled([log.append('together', pageIn(20)), log.append('together', { turn: 21 }), log.append('together', pageIn(22))]);
    expect(mixed.map((result) => (result.status === 'fulfilled' ? result.value : 'refused'))).toEqual([20, 'refused', 21]);
  });

  it("keeps an event the database refuses from failing the other callers' appends that went with it in one statement", async () => {
    const log = sessionLog();
    // Its kind is page_in as a property but page_out as JSON.stringify gets it: the database's check refuses the row.
    const refused = new Proxy(pageIn(2), { get: (target, key, receiver) => (key === 'kind' ? 'page_out' : Reflect.get(target, key, receiver)) });
    const results = await Promise.allSettled([
      log.append('shared-statement', pageIn(1)),
      log.appendMany('shared-statement', [pageIn(2), refused]),
      log.append('shared-statement', pageIn(3)),
      log.appendMany('shared-statement', [pageIn(4), pageIn(5)]),
    ]);
    expect(results.map((result) => (result.status === 'fulfilled' ? result.value : (result.reason as { code?: string }).code))).toEqual([0, '23514', 1, [2, 3]]);
    expect((await log.read('shared-statement')).map((entry) => entry.event.turn)).toEqual([1, 3, 4, 5]);
  });

  it('filters by kernel primitive as the SDK maps kinds (v0.2.60 by default, 0.2.36 when asked)', async () => {
    const log = sessionLog();
    for (const kind of ['run_started', 'page_out', 'suspended', 'tool_gated', 'large_result_spooled', 'agent_process_changed', 'memory_written']) {
      await log.append('primitives', { kind, turn: 0 });
    }
    const kinds = async (primitive: KernelPrimitive, fromSeq = 0, from = log) => (await from.read('primitives', fromSeq, primitive)).map((entry) => entry.event.kind);
    expect(await kinds('mm')).toEqual(['page_out', 'memory_written']);
    expect(await kinds('syscall')).toEqual(['tool_gated']);
    expect(await kinds('sched')).toEqual(['run_started', 'suspended', 'large_result_spooled', 'agent_process_changed']);
    expect(await kinds('sched', 2)).toEqual(['suspended', 'large_result_spooled', 'agent_process_changed']);
    expect(await kinds('proc' as KernelPrimitive)).toEqual([]);
    const old = new PostgresSessionLog(testDb.db, { primitives: KERNEL_PRIMITIVES_V0_2_36 });
    expect(await kinds('mm', 0, old)).toEqual(['page_out', 'large_result_spooled', 'memory_written']);
  });

  it('refuses session ids that PostgreSQL text cannot hold, for reads too', async () => {
    const log = sessionLog();
    await expect(log.append('', pageIn(1))).rejects.toThrow(/session id/);
    await expect(log.append('bad\u0000id', pageIn(1))).rejects.toBeInstanceOf(InvalidEventError);
    // The driver would send the lone surrogate as U+FFFD: this must not read that session.
    await log.append('lone\ufffd', pageIn(1));
    await expect(log.read('lone\ud800')).rejects.toThrow(/session id/);
    await expect(log.latestSeq('lone\ud800')).rejects.toThrow(/session id/);
  });

  it('keeps sessions independent', async () => {
    const log = sessionLog();
    expect(await log.append('left', pageIn(1))).toBe(0);
    expect(await log.append('right', pageIn(10))).toBe(0);
    expect(await log.append('left', pageIn(2))).toBe(1);
    expect(await log.append('right', pageIn(11))).toBe(1);
    expect(await log.append('right', pageIn(12))).toBe(2);
    expect((await log.read('left')).map((entry) => entry.event.turn)).toEqual([1, 2]);
    expect((await log.read('right')).map((entry) => entry.event.turn)).toEqual([10, 11, 12]);
    expect([await log.latestSeq('left'), await log.latestSeq('right')]).toEqual([1, 2]);
  });
});

describe('appendMany', () => {
  it('appends a batch at consecutive seqs, all or nothing', async () => {
    const log = sessionLog();
    expect(await log.appendMany('batch', [pageIn(1), pageIn(2)])).toEqual([0, 1]);
    expect(await log.appendMany('batch', [])).toEqual([]);
    const attempt = log.appendMany('batch', [pageIn(3), { turn: 4 }, pageIn(5)]);
    await expect(attempt).rejects.toThrow(/session "batch", event #1: field "kind"/);
    expect(await log.appendMany('batch', [pageIn(3)])).toEqual([2]);
    expect((await log.read('batch')).map((entry) => entry.event.turn)).toEqual([1, 2, 3]);
  });
});

describe('connections', () => {
  it('connect opens a pool that close ends; a database passed in stays open', async () => {
    const owned = PostgresSessionLog.connect({ connectionString: testDb.url, maxConnections: 2 });
    expect(await owned.append('pools', pageIn(1))).toBe(0);
    await owned.close();
    await expect(owned.latestSeq('pools')).rejects.toThrow();

    const borrowed = sessionLog();
    await borrowed.close();
    expect(await borrowed.latestSeq('pools')).toBe(0);
  });
});

describe('concurrent writers', () => {
  it('hands out gap-free seqs to many concurrent appends on one pool, each seq where its event stands', async () => {
    const log = sessionLog();
    const count = 300;
    const single = Promise.all(range(count).map((i) => log.append('pool-writers', { ...pageIn(i), i })));
    const batches = Promise.all(range(20).map((b) => log.appendMany('pool-writers', range(3).map((j) => ({ ...pageIn(j), b, j })))));
    const [seqs, batchSeqs] = await Promise.all([single, batches]);

    const total = count + 20 * 3;
    expect([...seqs, ...batchSeqs.flat()].sort((a, b) => a - b)).toEqual(range(total));
    const entries = await log.read('pool-writers');
    expect(entries.map((entry) => entry.seq)).toEqual(range(total));
    seqs.forEach((seq, i) => expect(entries[seq]!.event.i).toBe(i));
    batchSeqs.forEach((got, b) => {
      expect(got).toEqual([got[0]!, got[0]! + 1, got[0]! + 2]);
      expect(got.map((seq) => [entries[seq]!.event.b, entries[seq]!.event.j])).toEqual([[b, 0], [b, 1], [b, 2]]);
    });
  });

  it('hands out gap-free seqs to writers in separate processes appending to one session at once', async () => {
    const writers = 4;
    const perWriter = 200;
    const started = await Promise.all(range(writers).map((writer) => startWriter(testDb.url, 'process-writers', writer, perWriter)));
    for (const writer of started) writer.child.stdin!.end('go\n');
    const reported = await Promise.all(started.map((writer) => writer.result));

    const entries = await sessionLog().read('process-writers');
    expect(entries.map((entry) => entry.seq)).toEqual(range(writers * perWriter));
    // seq of each (writer, index) as stored; each pair exactly once
    const stored = new Map<string, number>();
    for (const { seq, event } of entries) {
      const key = `${String(event.writer)}/${String(event.index)}`;
      expect(stored.has(key), `${key} stored twice`).toBe(false);
      stored.set(key, seq);
    }
    expect(stored.size).toBe(writers * perWriter);
    for (const { writer, seqs } of reported) {
      const storedSeqs = range(perWriter).map((index) => stored.get(`${writer}/${index}`));
      expect(seqs, `writer ${writer}: the seqs append returned are where its events are stored`).toEqual(storedSeqs);
      expect([...seqs].sort((a, b) => a - b), `writer ${writer}: its events in its own order`).toEqual(seqs);
    }
    // Otherwise the writers took turns and the test proved nothing about concurrency.
    const switches = entries.filter((entry, i) => i > 0 && entry.event.writer !== entries[i - 1]!.event.writer).length;
    expect(switches, 'the writers appended at the same time').toBeGreaterThan(writers - 1);
  });
});

const writerScript = fileURLToPath(new URL('./append-writer.ts', import.meta.url));
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const children: ChildProcess[] = [];

afterEach(async () => {
  const running = children.splice(0).filter((child) => child.exitCode === null && child.signalCode === null);
  for (const child of running) child.kill('SIGKILL');
  await Promise.all(running.map((child) => new Promise((resolve) => child.once('exit', resolve))));
});

interface Writer {
  child: ChildProcess;
  /** What the writer printed at the end: the seq each of its appends got. */
  result: Promise<{ writer: number; seqs: number[] }>;
}

/** Starts `append-writer.ts` as its own process; resolves once it is connected and waits for stdin. */
function startWriter(databaseUrl: string, sessionId: string, writer: number, count: number): Promise<Writer> {
  const child = spawn(process.execPath, ['--import', 'tsx', writerScript, databaseUrl, sessionId, String(writer), String(count)], {
    cwd: repoRoot,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  const result = exited.then((code) => {
    if (code !== 0) throw new Error(`writer ${writer} exited with ${code}; stderr:\n${stderr}`);
    return JSON.parse(stdout.split('\n').at(-2)!) as { writer: number; seqs: number[] };
  });
  result.catch(() => {}); // awaited by the test once started; a failure before that rejects the start
  return new Promise((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (stdout.startsWith('ready\n')) resolve({ child, result });
    });
    void exited.then((code) => reject(new Error(`writer ${writer} exited with ${code} before it was ready; stderr:\n${stderr}`)));
  });
}
