import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { importLogs } from '../../src/import/import-logs.js';
import { PostgresSessionLog } from '../../src/session-log/postgres-session-log.js';
import { EventStore } from '../../src/store/event-store.js';
import { InvalidEventError } from '../../src/events/invalid-event-error.js';
import type { Limits } from '../../src/events/limits.js';
import { arbitraryJsonValue } from '../support/arbitrary-events.js';
import { useTempDir } from '../support/log-files.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();
const tempDir = useTempDir();
const store = () => new EventStore(testDb.db);

/** Events and session heads stored for sessions whose id starts with `prefix`. */
async function storedUnder(prefix: string): Promise<{ events: number; sessions: number }> {
  const { rows } = await sql<{ events: number; sessions: number }>`
    SELECT (SELECT count(*)::int FROM session_events WHERE starts_with(session_id, ${prefix})) AS events,
           (SELECT count(*)::int FROM sessions WHERE starts_with(session_id, ${prefix})) AS sessions`.execute(testDb.db);
  return rows[0]!;
}

/** Each property run writes sessions of its own, so that what it stored can be counted alone. */
let runs = 0;
const nextPrefix = () => `run${++runs}-`;
const PREFIX = '\u0001PFX\u0001';

/** An event's JSON text, deeply nested (`maxDepth` levels of arrays in the event object at most), with a huge string or huge numbers. */
function eventOf(maxDepth: number): fc.Arbitrary<string> {
  return fc.oneof(
    fc.record({ kind: fc.constantFrom('page_in', 'x', 'llm_completed'), turn: fc.nat(9) }).map((event) => JSON.stringify(event)),
    fc.integer({ min: 1, max: maxDepth }).map((depth) => `{"kind":"deep","a":${'['.repeat(depth)}${']'.repeat(depth)}}`),
    fc.integer({ min: 0, max: 20_000 }).map((length) => `{"kind":"long","s":"${'é'.repeat(length)}"}`),
    fc.integer({ min: 1, max: 3000 }).map((digits) => `{"kind":"numbers","turn":${'9'.repeat(digits)},"f":-0.${'5'.repeat(digits)}e-${'1'.repeat(1 + (digits % 40))}}`),
  );
}

/** An event of up to 511 levels of arrays in the event object: 512 levels, the most allowed. */
const validEventText = eventOf(511);

/** An event's text that may be too deep, or any JSON value (mostly no event). */
const eventText = fc.oneof(
  eventOf(600),
  arbitraryJsonValue().map((value) => JSON.stringify(value, (_, v: unknown) => (typeof v === 'bigint' ? Number(v) : v)) ?? 'null'),
);

/** A stream's line: a session of a few, a seq that may repeat or leave a gap. */
const streamLine = fc
  .tuple(fc.constantFrom('a', 'b', 'c'), fc.nat(4), eventText)
  .map(([session, seq, event]) => `{"session_id":"${PREFIX}${session}","seq":${seq},"event":${event}}`);

/** Hostile lines: truncated, arbitrary bytes, a session id that is too long or no string. */
function hostileLine(line: fc.Arbitrary<string>): fc.Arbitrary<string | Uint8Array> {
  return fc.oneof(
    { arbitrary: line, weight: 4 },
    fc.tuple(line, fc.nat()).map(([text, cut]) => text.slice(0, cut % text.length)),
    fc.uint8Array({ maxLength: 300 }),
    fc.string({ unit: 'binary', maxLength: 80 }),
    fc.constantFrom(`{"session_id":"${PREFIX}${'s'.repeat(5000)}","seq":0,"event":{"kind":"x"}}`, '{"session_id":7,"seq":0,"event":{"kind":"x"}}', '{"seq":0,"event":{"kind":"x"}}'),
  );
}

function inputOf(lines: readonly (string | Uint8Array)[], prefix: string): Buffer {
  return Buffer.concat(lines.flatMap((line) => [typeof line === 'string' ? Buffer.from(line.replaceAll(PREFIX, prefix)) : Buffer.from(line), Buffer.from('\n')]));
}

/** No limits, or small ones that the generated lines often cross. */
const limits: fc.Arbitrary<Limits> = fc.oneof(fc.constant({}), fc.record({ maxEventBytes: fc.integer({ min: 20, max: 30_000 }), maxSessionIdBytes: fc.integer({ min: 1, max: 60 }) }));

/** A stream of a few sessions' events in seq order, which must be stored whole. */
const goodStream = fc
  .array(fc.tuple(fc.constantFrom('a', 'b'), validEventText), { maxLength: 30 })
  .map((events) => {
    const next = new Map<string, number>();
    return events.map(([session, event]) => {
      const seq = next.get(session) ?? 0;
      next.set(session, seq + 1);
      return `{"session_id":"${PREFIX}${session}","seq":${seq},"event":${event}}`;
    });
  });

describe('hostile input to import: a clear error, nothing of the rejected unit stored, never a crash', () => {
  it('a stream of arbitrary, truncated, deep, huge and misnumbered lines, in any chunks: stored whole or not at all', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(hostileLine(streamLine), { maxLength: 12 }), limits, fc.array(fc.nat(), { maxLength: 6 }), async (lines, options, cuts) => {
        const prefix = nextPrefix();
        const input = inputOf(lines, prefix);
        const points = [...new Set(cuts.map((cut) => cut % (input.length + 1)))].sort((a, b) => a - b);
        const chunks = [0, ...points].map((start, index) => input.subarray(start, [...points, input.length][index])).filter((chunk) => chunk.length > 0);
        const report = await importLogs(store(), '-', options, Readable.from(chunks));
        const stored = await storedUnder(prefix);
        if (report.failures.length > 0) {
          expect(report.failures).toHaveLength(1);
          expect(report.failures[0]!.message).toMatch(/^<stdin>(:\d+)?: /);
          expect(stored).toEqual({ events: 0, sessions: 0 });
        } else {
          expect(stored.events).toBe(report.newEvents);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('a stream in seq order is stored whole; one hostile line in it stores nothing of it', async () => {
    await fc.assert(
      fc.asyncProperty(goodStream, fc.option(fc.tuple(hostileLine(streamLine), fc.nat())), async (lines, corruption) => {
        const prefix = nextPrefix();
        const all = [...lines] as (string | Uint8Array)[];
        if (corruption !== null) all.splice(corruption[1] % (all.length + 1), 0, corruption[0]);
        const report = await importLogs(store(), '-', {}, Readable.from([inputOf(all, prefix)]));
        const stored = await storedUnder(prefix);
        if (corruption === null) expect(report).toMatchObject({ failures: [], newEvents: lines.length });
        if (report.failures.length > 0) expect(stored).toEqual({ events: 0, sessions: 0 });
        else expect(stored.events).toBe(report.newEvents);
      }),
      { numRuns: 100 },
    );
  });

  it('a folder of hostile session files: each bad file is named and stores nothing, the good ones are stored', async () => {
    const sessionLine = fc.tuple(fc.nat(3), eventText).map(([seq, event]) => `{"seq":${seq},"event":${event}}`);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(hostileLine(sessionLine), { maxLength: 5 }), { minLength: 1, maxLength: 4 }), limits, async (files, options) => {
        const prefix = nextPrefix();
        const dir = tempDir();
        files.forEach((lines, index) => writeFileSync(path.join(dir, `${prefix}${index}.jsonl`), inputOf(lines, prefix)));
        const report = await importLogs(store(), dir, options);
        const failed = new Set(report.failures.map((failure) => path.basename(failure.source, '.jsonl')));
        for (const failure of report.failures) expect(failure.message).toMatch(new RegExp(`^${dir}/${prefix}\\d\\.jsonl(:\\d+)?: `));
        let events = 0;
        for (let index = 0; index < files.length; index++) {
          const stored = await storedUnder(`${prefix}${index}`);
          if (failed.has(`${prefix}${index}`)) expect(stored, `${prefix}${index}`).toEqual({ events: 0, sessions: 0 });
          events += stored.events;
        }
        expect(events).toBe(report.newEvents);
      }),
      { numRuns: 40 },
    );
  });

  it('EventStore.append and PostgresSessionLog.append of any JSON value, under any limits: stored, or an InvalidEventError and nothing stored', async () => {
    const hugeOrDeep = fc.oneof(
      arbitraryJsonValue(),
      fc.integer({ min: 0, max: 20_000 }).map((length) => ({ kind: 'long', s: 'x'.repeat(length) })),
      fc.integer({ min: 1, max: 600 }).map((depth) => {
        let a: unknown = [];
        for (let level = 1; level < depth; level++) a = [a];
        return { kind: 'deep', a };
      }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(hugeOrDeep, { minLength: 1, maxLength: 4 }), limits, fc.string({ maxLength: 70 }), fc.boolean(), async (events, options, name, viaSessionLog) => {
        const sessionId = `${nextPrefix()}${name}`;
        const append = viaSessionLog
          ? () => new PostgresSessionLog(testDb.db, { values: 'exact', ...options }).appendMany(sessionId, events as never[])
          : () => store().append(sessionId, events as never[], options);
        const outcome = await append().catch((error: unknown) => error);
        const stored = await storedUnder(sessionId);
        if (outcome instanceof Error) {
          expect(outcome).toBeInstanceOf(InvalidEventError);
          expect(stored).toEqual({ events: 0, sessions: 0 });
        } else {
          expect(stored.events).toBe(events.length);
        }
      }),
      { numRuns: 150 },
    );
  });
});

describe('the limits, through the library', () => {
  it('refuses an event over maxEventBytes and a session id over maxSessionIdBytes, naming them, and stores nothing', async () => {
    const event = { kind: 'x', s: 'é'.repeat(100) }; // 219 bytes of JSON
    await expect(store().append('lim-store', [event], { maxEventBytes: 218 })).rejects.toThrow(
      /^session "lim-store", event #0: the event is 219 bytes, more than 218 \(the limit is maxEventBytes, --max-event-bytes or OS_AUDIT_MAX_EVENT_BYTES\)$/,
    );
    expect(await store().append('lim-store', [event], { maxEventBytes: 219 })).toEqual([0]);

    const log = new PostgresSessionLog(testDb.db, { maxEventBytes: 218, maxSessionIdBytes: 8 });
    await expect(log.append('lim-log', event)).rejects.toThrow(/^session "lim-log": the event is 219 bytes, more than 218/);
    await expect(log.append('lim-log-9', { kind: 'x' })).rejects.toThrow(/^session id "lim-log-9" is 9 bytes, longer than 8 \(the limit is maxSessionIdBytes/);
    expect(await log.append('lim-log', { kind: 'x' })).toBe(0);

    // The default: 1024 bytes, under what a btree index entry of PostgreSQL may hold.
    await expect(store().append('é'.repeat(513), [{ kind: 'x' }])).rejects.toThrow(/^session id "é+…" is 1026 bytes, longer than 1024/);
    expect(await store().append('é'.repeat(512), [{ kind: 'x' }])).toEqual([0]);
    expect(await storedUnder('lim-')).toEqual({ events: 2, sessions: 2 });
  });

  it('refuses a too long line of a session file, naming file, line and session, and does not read the file further', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'lim-file.jsonl');
    writeFileSync(file, `{"seq":0,"event":{"kind":"x"}}\n{"seq":1,"event":{"kind":"x","s":"${'x'.repeat(300_000)}"}}\n{"seq":2,`);
    const report = await importLogs(store(), file, { maxEventBytes: 100, maxSessionIdBytes: 10 });
    expect(report.failures.map((failure) => failure.message)).toEqual([
      `${file}:2: session "lim-file": the line is longer than 65696 bytes, more than an event of 100 bytes with its envelope; the rest of the input is not read (the limit is maxEventBytes, --max-event-bytes or OS_AUDIT_MAX_EVENT_BYTES)`,
    ]);
    // Within the line limit, the event's own limit refuses it.
    writeFileSync(file, `{"seq":0,"event":{"kind":"x","s":"${'x'.repeat(100)}"}}\n`);
    expect((await importLogs(store(), dir, { maxEventBytes: 100 })).failures[0]!.message).toBe(
      `${file}:1: session "lim-file", seq 0: the event is 119 bytes, more than 100 (the limit is maxEventBytes, --max-event-bytes or OS_AUDIT_MAX_EVENT_BYTES)`,
    );
    // A session id from a file's name is bounded too.
    expect((await importLogs(store(), dir, { maxSessionIdBytes: 7 })).failures[0]!.message).toMatch(/^.*lim-file\.jsonl: session id "lim-file" is 8 bytes, longer than 7/);
    expect(await storedUnder('lim-file')).toEqual({ events: 0, sessions: 0 });
  });

  it('imports one 50 MB event in linear time (the former reader took 78 s), stored as written', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'big-50.jsonl');
    const size = 50 * 2 ** 20;
    writeFileSync(file, `{"seq":0,"event":{"kind":"big","s":"${'x'.repeat(size)}"}}\n`);
    const started = performance.now();
    const report = await importLogs(store(), file);
    console.log(`imported a 50 MB event in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    expect(report).toMatchObject({ failures: [], newEvents: 1 });
    const { rows } = await sql<{ bytes: number }>`SELECT octet_length(payload::text) AS bytes FROM session_events WHERE session_id = 'big-50'`.execute(testDb.db);
    expect(rows).toEqual([{ bytes: size + 21 }]);
  }, 120_000);
});
