import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { importLogs } from '../../src/import/import-logs.js';
import { EventStore } from '../../src/store/event-store.js';
import { sampleEvent, sessionLine, useTempDir, writeSessionFile } from '../support/log-files.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();
const tempDir = useTempDir();
const store = () => new EventStore(testDb.db);

async function storedSeqs(sessionId: string): Promise<number[]> {
  const rows = await testDb.db.selectFrom('session_events').select('seq').where('session_id', '=', sessionId).orderBy('seq').execute();
  return rows.map((row) => row.seq);
}

async function storedEvents(sessionId: string) {
  const events = [];
  for await (const stored of store().readSession(sessionId)) events.push(stored.event);
  return events;
}

function streamOf(lines: readonly string[]): Readable {
  return Readable.from([lines.map((line) => `${line}\n`).join('')]);
}

describe('importing a directory of <session_id>.jsonl files', () => {
  it('stores 1,000 sessions × 200 events once; a second import stores 0 new events', async () => {
    const dir = tempDir();
    for (let session = 0; session < 1000; session += 1) {
      writeSessionFile(dir, `bulk-${session}`, Array.from({ length: 200 }, (_, seq) => sessionLine(seq, sampleEvent(seq))));
    }
    const first = await importLogs(store(), dir);
    expect(first).toMatchObject({ newEvents: 200_000, existingEvents: 0, sessions: 1000, files: 1000, failures: [] });

    const second = await importLogs(store(), dir);
    expect(second).toMatchObject({ newEvents: 0, existingEvents: 200_000, sessions: 1000, failures: [] });

    const counts = await testDb.db
      .selectFrom('session_events')
      .select((eb) => [eb.fn.countAll<number>().as('events'), eb.fn.count<number>('session_id').distinct().as('sessions')])
      .where('session_id', 'like', 'bulk-%')
      .executeTakeFirstOrThrow();
    expect({ events: Number(counts.events), sessions: Number(counts.sessions) }).toEqual({ events: 200_000, sessions: 1000 });
  }, 300_000);

  it('reports a bad line 57 as file:57: and stores nothing of that session, but the other files', async () => {
    const dir = tempDir();
    const lines = Array.from({ length: 100 }, (_, seq) => sessionLine(seq, sampleEvent(seq)));
    lines[56] = sessionLine(56, { turn: 3, signal_id: 's', disposition: 'queue', queue_depth: 4 });
    const bad = writeSessionFile(dir, 'bad-57', lines);
    writeSessionFile(dir, 'good-57', lines.slice(0, 56));

    const report = await importLogs(store(), dir);
    expect(report.failures).toHaveLength(1);
    expect(report.failures[0]!.source).toBe(bad);
    expect(report.failures[0]!.message).toContain(`${bad}:57: session "bad-57", seq 56: `);
    expect(report.failures[0]!.message).toMatch(/field "kind": required field is missing/);
    expect(await storedSeqs('bad-57')).toEqual([]);
    expect(await storedSeqs('good-57')).toHaveLength(56);
  });

  it.each([
    ['malformed JSON', '{"seq":1,"event":{"kind":"page_in",}', /:2: .*invalid JSON/],
    ['a duplicate key', '{"seq":1,"event":{"kind":"page_in","turn":1,"turn":2,"entry_count":1}}', /:2: .*duplicate key "turn"/],
    ['a missing seq', '{"event":{"kind":"page_in","turn":1,"entry_count":1}}', /:2: .*field "seq" is missing/],
    ['a negative seq', '{"seq":-1,"event":{"kind":"page_in","turn":1,"entry_count":1}}', /:2: .*field "seq"/],
    ['an extra envelope field', '{"seq":1,"event":{"kind":"page_in","turn":1,"entry_count":1},"ts":5}', /:2: .*unexpected field "ts"/],
    ['an event that is not an object', '{"seq":1,"event":[1,2]}', /:2: session "e", seq 1: /],
    ['a gap', sessionLine(3, sampleEvent(3)), /:3: session "e", seq 2: a gap: seq 1 is missing; the input ends without it/],
    ['a repeated seq with another event', sessionLine(0, sampleEvent(1)), /:2: session "e", seq 0: conflict: this seq is already stored by an earlier line of this input with a different event/],
  ])('names the line of %s and stores nothing of the file', async (_case, secondLine, message) => {
    const dir = tempDir();
    writeSessionFile(dir, 'e', [sessionLine(0, sampleEvent(0)), secondLine, sessionLine(2, sampleEvent(2))]);
    const report = await importLogs(store(), dir);
    expect(report.failures).toHaveLength(1);
    expect(report.failures[0]!.message).toMatch(message);
    expect(await storedSeqs('e')).toEqual([]);
  });

  it('rejects a line that is not UTF-8 instead of storing a replacement character', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'latin1.jsonl');
    writeFileSync(file, Buffer.concat([Buffer.from(`${sessionLine(0, sampleEvent(0))}\n{"seq":1,"event":{"kind":"x_note","text":"caf`), Buffer.from([0xe9]), Buffer.from('"}}\n')]));
    const report = await importLogs(store(), dir);
    expect(report.failures[0]!.message).toMatch(/latin1\.jsonl:2: session "latin1": not valid UTF-8/);
    expect(await storedSeqs('latin1')).toEqual([]);
  });

  it('continues a stored log, and refuses a re-import whose body differs (a conflict)', async () => {
    const dir = tempDir();
    const lines = Array.from({ length: 10 }, (_, seq) => sessionLine(seq, sampleEvent(seq)));
    writeSessionFile(dir, 'grow', lines.slice(0, 4));
    await importLogs(store(), dir);
    writeSessionFile(dir, 'grow', lines);
    expect(await importLogs(store(), dir)).toMatchObject({ newEvents: 6, existingEvents: 4, failures: [] });

    const changed = [...lines];
    changed[2] = sessionLine(2, { ...sampleEvent(2), extra: 'rewritten' });
    writeSessionFile(dir, 'grow', changed);
    const report = await importLogs(store(), dir);
    expect(report.failures[0]!.message).toMatch(/grow\.jsonl:3: session "grow", seq 2: conflict/);
    expect(await storedSeqs('grow')).toHaveLength(10);
  });

  it('refuses a file that does not continue the stored log', async () => {
    const dir = tempDir();
    writeSessionFile(dir, 'late', [sessionLine(0, sampleEvent(0))]);
    await importLogs(store(), dir);
    writeSessionFile(dir, 'late', [sessionLine(5, sampleEvent(5)), sessionLine(6, sampleEvent(6))]);
    const report = await importLogs(store(), dir);
    expect(report.failures[0]!.message).toMatch(/late\.jsonl:1: session "late", seq 5: a gap: seq 1 is missing \(the stored log of this session ends at seq 0\)/);
  });

  it('works across chunk boundaries', async () => {
    const dir = tempDir();
    writeSessionFile(dir, 'chunked', Array.from({ length: 53 }, (_, seq) => sessionLine(seq, sampleEvent(seq))));
    expect(await importLogs(store(), dir, { chunkSize: 7 })).toMatchObject({ newEvents: 53 });
    expect(await importLogs(store(), dir, { chunkSize: 5 })).toMatchObject({ newEvents: 0, existingEvents: 53 });
    expect(await storedSeqs('chunked')).toEqual(Array.from({ length: 53 }, (_, i) => i));
  });

  it('refuses unknown kinds only in strict mode', async () => {
    const dir = tempDir();
    writeSessionFile(dir, 'newer-sdk', [sessionLine(0, { kind: 'workflow_completed', turn: 1, anything: [1] })]);
    expect((await importLogs(store(), dir, { strict: true })).failures[0]!.message).toMatch(/workflow_completed/);
    expect(await importLogs(store(), dir)).toMatchObject({ newEvents: 1, failures: [] });
  });
});

describe('importing one JSONL stream of {"session_id","seq","event"} lines', () => {
  const line = (sessionId: string, seq: number, event: object = sampleEvent(seq)) =>
    JSON.stringify({ session_id: sessionId, seq, event });

  it('stores interleaved sessions in order, and again stores nothing new', async () => {
    const lines = [];
    for (let seq = 0; seq < 30; seq += 1) for (const sessionId of ['st-a', 'st-b', 'st-c']) lines.push(line(sessionId, seq));
    expect(await importLogs(store(), '-', { chunkSize: 8 }, streamOf(lines))).toMatchObject({ newEvents: 90, sessions: 3, failures: [] });
    expect(await importLogs(store(), '-', {}, streamOf(lines))).toMatchObject({ newEvents: 0, existingEvents: 90 });
    expect(await storedSeqs('st-b')).toEqual(Array.from({ length: 30 }, (_, i) => i));
  });

  it('stores nothing of the stream when one line is bad', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'all.jsonl');
    const lines = [line('sx-a', 0), line('sx-b', 0), line('sx-a', 1), '{"session_id":"sx-b","seq":1,"event":{"kind":"","turn":1}}'];
    writeFileSync(file, `${lines.join('\n')}\n`);
    const report = await importLogs(store(), file, { chunkSize: 1 });
    expect(report.failures[0]!.message).toMatch(/all\.jsonl:4: session "sx-b", seq 1: field "kind": expected a non-empty string/);
    expect(await storedSeqs('sx-a')).toEqual([]);
    expect(await storedSeqs('sx-b')).toEqual([]);
  });

  it('keeps u64 values and U+0000 in free text exactly', async () => {
    const lines = [
      '{"session_id":"exact-import","seq":0,"event":{"kind":"run_terminal","reason":"done","turns_used":1,"total_tokens":18446744073709551615}}',
      '{"session_id":"exact-import","seq":1,"event":{"kind":"tool_completed","turn":1,"results":[{"output":"bin\\u0000ary"}]}}',
    ];
    expect(await importLogs(store(), '-', {}, streamOf(lines))).toMatchObject({ newEvents: 2, failures: [] });
    const [terminal, completed] = await storedEvents('exact-import');
    expect(terminal!.total_tokens).toBe(18446744073709551615n);
    expect(completed!.results).toEqual([{ output: 'bin\u0000ary' }]);
    expect(await importLogs(store(), '-', {}, streamOf(lines))).toMatchObject({ newEvents: 0, existingEvents: 2, failures: [] });
  });

  it('refuses a session id that text cannot hold', async () => {
    const report = await importLogs(store(), '-', {}, streamOf(['{"session_id":"a\\u0000b","seq":0,"event":{"kind":"x"}}']));
    expect(report.failures[0]!.message).toMatch(/<stdin>:1: session id/);
  });
});

describe('lines of a session out of seq order', () => {
  const lines = (seqs: readonly number[]) => seqs.map((seq) => sessionLine(seq, sampleEvent(seq)));
  /** 0..n-1 in an order far from sorted: odd seqs descending, then even seqs ascending. */
  const shuffled = (n: number) => [
    ...Array.from({ length: n }, (_, i) => i).filter((seq) => seq % 2 === 1).reverse(),
    ...Array.from({ length: n }, (_, i) => i).filter((seq) => seq % 2 === 0),
  ];
  const inOrder = (n: number) => Array.from({ length: n }, (_, seq) => sampleEvent(seq));

  it('stores a file of complete seqs in seq order, read whole or streamed in chunks', async () => {
    const dir = tempDir();
    writeSessionFile(dir, 'shuffled-small', lines(shuffled(12)));
    writeSessionFile(dir, 'shuffled-large', lines(shuffled(40)));
    expect(await importLogs(store(), dir, { chunkSize: 15 })).toMatchObject({ newEvents: 52, existingEvents: 0, sessions: 2, failures: [] });
    expect(await storedEvents('shuffled-small')).toEqual(inOrder(12));
    expect(await storedEvents('shuffled-large')).toEqual(inOrder(40));
    expect(await importLogs(store(), dir, { chunkSize: 15 })).toMatchObject({ newEvents: 0, existingEvents: 52, failures: [] });
  });

  it('stores the sessions of a stream in seq order', async () => {
    const stream = shuffled(9).flatMap((seq) => ['ooo-a', 'ooo-b'].map((sessionId) => JSON.stringify({ session_id: sessionId, seq, event: sampleEvent(seq) })));
    expect(await importLogs(store(), '-', { chunkSize: 4 }, streamOf(stream))).toMatchObject({ newEvents: 18, sessions: 2, failures: [] });
    expect(await storedEvents('ooo-a')).toEqual(inOrder(9));
    expect(await storedEvents('ooo-b')).toEqual(inOrder(9));
  });

  it('continues a stored log with lines out of order, checking those already stored', async () => {
    const dir = tempDir();
    writeSessionFile(dir, 'ooo-grow', lines([0, 1]));
    await importLogs(store(), dir);
    writeSessionFile(dir, 'ooo-grow', lines([4, 1, 3, 0, 2]));
    expect(await importLogs(store(), dir)).toMatchObject({ newEvents: 3, existingEvents: 2, failures: [] });
    expect(await storedEvents('ooo-grow')).toEqual(inOrder(5));
  });

  it('takes a repeated seq with the identical event once, counted as already stored, early or late', async () => {
    const dir = tempDir();
    writeSessionFile(dir, 'repeated', lines([0, 2, 2, 1, 0, 3]));
    expect(await importLogs(store(), dir)).toMatchObject({ newEvents: 4, existingEvents: 2, failures: [] });
    expect(await storedEvents('repeated')).toEqual(inOrder(4));
  });

  it('refuses two lines with one seq and different events, naming both lines', async () => {
    const dir = tempDir();
    const file = writeSessionFile(dir, 'two-of-3', [...lines([0, 3, 2]), sessionLine(3, sampleEvent(4)), ...lines([1])]);
    const report = await importLogs(store(), dir);
    expect(report.failures[0]!.message).toBe(`${file}:4: session "two-of-3", seq 3: conflict: line 2 has this seq with a different event`);
    expect(await storedSeqs('two-of-3')).toEqual([]);
  });

  it('refuses an input that ends before a missing seq, naming it, in a file streamed in chunks and in a stream', async () => {
    const dir = tempDir();
    const file = writeSessionFile(dir, 'holed', lines([0, 1, 2, 3, 5, 6, 4, 8, 9, 10, 11]));
    const report = await importLogs(store(), dir, { chunkSize: 3 });
    expect(report.failures[0]!.message).toBe(`${file}:8: session "holed", seq 8: a gap: seq 7 is missing; the input ends without it`);
    expect(await storedSeqs('holed')).toEqual([]);

    const stream = [JSON.stringify({ session_id: 'holed-stream', seq: 1, event: sampleEvent(1) })];
    const streamed = await importLogs(store(), '-', {}, streamOf(stream));
    expect(streamed.failures[0]!.message).toBe('<stdin>:1: session "holed-stream", seq 1: a gap: seq 0 is missing; the input ends without it');
  });
});

describe('importing one <session_id>.jsonl file', () => {
  it('imports {"seq","event"} lines as the session the file is named after, and again stores nothing new', async () => {
    const file = writeSessionFile(tempDir(), 'single', Array.from({ length: 5 }, (_, seq) => sessionLine(seq, sampleEvent(seq))));
    expect(await importLogs(store(), file)).toMatchObject({ newEvents: 5, existingEvents: 0, sessions: 1, files: 1, failures: [] });
    expect(await importLogs(store(), file, { chunkSize: 2 })).toMatchObject({ newEvents: 0, existingEvents: 5, sessions: 1, failures: [] });
    expect(await storedSeqs('single')).toEqual([0, 1, 2, 3, 4]);
  });

  it('stores its lines in seq order, and refuses it whole for a missing seq', async () => {
    const dir = tempDir();
    const shuffled = writeSessionFile(dir, 'single-shuffled', [3, 1, 0, 2].map((seq) => sessionLine(seq, sampleEvent(seq))));
    expect(await importLogs(store(), shuffled, { chunkSize: 2 })).toMatchObject({ newEvents: 4, failures: [] });
    expect(await storedEvents('single-shuffled')).toEqual([0, 1, 2, 3].map(sampleEvent));

    const holed = writeSessionFile(dir, 'single-holed', [0, 2].map((seq) => sessionLine(seq, sampleEvent(seq))));
    const report = await importLogs(store(), holed);
    expect(report.failures).toEqual([{ source: holed, message: `${holed}:2: session "single-holed", seq 2: a gap: seq 1 is missing; the input ends without it` }]);
    expect(await storedSeqs('single-holed')).toEqual([]);
  });

  it('reads a file whose first line has a session_id as a stream, whatever its name', async () => {
    const file = path.join(tempDir(), 'mixed.jsonl');
    writeFileSync(file, `\n${JSON.stringify({ session_id: 'from-stream', seq: 0, event: sampleEvent(0) })}\n`);
    expect(await importLogs(store(), file)).toMatchObject({ newEvents: 1, sessions: 1, failures: [] });
    expect(await storedSeqs('from-stream')).toEqual([0]);
    expect(await storedSeqs('mixed')).toEqual([]);
  });

  it('refuses a session log that is not named <session_id>.jsonl, saying how to fix it', async () => {
    const file = path.join(tempDir(), 'log.txt');
    writeFileSync(file, `${sessionLine(0, sampleEvent(0))}\n`);
    const report = await importLogs(store(), file);
    expect(report.failures).toEqual([
      { source: file, message: `${file}: its lines are one session's log ({"seq", "event"}): name it <session_id>.jsonl, or give each line a "session_id"` },
    ]);
  });

  it('reports a first line that is not a JSON object at that line', async () => {
    const file = writeSessionFile(tempDir(), 'broken-first', ['{"seq":0,', sessionLine(1, sampleEvent(1))]);
    expect((await importLogs(store(), file)).failures[0]!.message).toMatch(/broken-first\.jsonl:1: invalid JSON/);
  });

  it('follows a symbolic link, naming the session after the link', async () => {
    const dir = tempDir();
    const target = writeSessionFile(dir, 'target-name', [sessionLine(0, sampleEvent(0))]);
    const link = path.join(dir, 'link-name.jsonl');
    symlinkSync(target, link);
    expect(await importLogs(store(), link)).toMatchObject({ newEvents: 1, sessions: 1, failures: [] });
    expect(await storedSeqs('link-name')).toEqual([0]);
  });
});

describe('empty logs: a session with no events yet', () => {
  it('stores nothing for an empty file or one of blank lines in a directory, reports them, and refuses nothing', async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'empty-a.jsonl'), '');
    writeFileSync(path.join(dir, 'empty-b.jsonl'), '\n  \r\n\t\n');
    writeSessionFile(dir, 'not-empty', [sessionLine(0, sampleEvent(0))]);
    expect(await importLogs(store(), dir)).toMatchObject({ newEvents: 1, sessions: 1, files: 3, emptyLogs: ['empty-a', 'empty-b'], failures: [] });
    expect(await storedSeqs('empty-a')).toEqual([]);
    expect(await storedSeqs('empty-b')).toEqual([]);
  });

  it('stores nothing for a single empty file: a session named after it, or an empty stream', async () => {
    const dir = tempDir();
    const log = path.join(dir, 'empty-single.jsonl');
    writeFileSync(log, '\n\n');
    expect(await importLogs(store(), log)).toMatchObject({ newEvents: 0, sessions: 0, files: 1, emptyLogs: ['empty-single'], failures: [] });
    const stream = path.join(dir, 'stream.txt');
    writeFileSync(stream, '');
    expect(await importLogs(store(), stream)).toMatchObject({ newEvents: 0, sessions: 0, files: 1, emptyLogs: [], failures: [] });
  });
});

describe('symbolic links in a directory', () => {
  it('follows a symlinked <session>.jsonl, naming the session after the link', async () => {
    const dir = tempDir();
    const elsewhere = tempDir();
    symlinkSync(writeSessionFile(elsewhere, 'real-file', [sessionLine(0, sampleEvent(0)), sessionLine(1, sampleEvent(1))]), path.join(dir, 'linked.jsonl'));
    expect(await importLogs(store(), dir)).toMatchObject({ newEvents: 2, sessions: 1, files: 1, failures: [] });
    expect(await storedSeqs('linked')).toEqual([0, 1]);
  });

  it('refuses a link to a directory and a broken link, each by name, and imports the other files', async () => {
    const dir = tempDir();
    mkdirSync(path.join(dir, 'folder'));
    symlinkSync(path.join(dir, 'folder'), path.join(dir, 'to-folder.jsonl'));
    symlinkSync(path.join(dir, 'missing.jsonl'), path.join(dir, 'broken.jsonl'));
    writeSessionFile(dir, 'fine', [sessionLine(0, sampleEvent(0))]);
    const report = await importLogs(store(), dir);
    expect(report).toMatchObject({ newEvents: 1, sessions: 1, files: 3, ignoredEntries: ['folder'] });
    expect(report.failures).toEqual([
      { source: path.join(dir, 'broken.jsonl'), message: `${path.join(dir, 'broken.jsonl')}: a broken symbolic link: its target does not exist` },
      { source: path.join(dir, 'to-folder.jsonl'), message: `${path.join(dir, 'to-folder.jsonl')}: a symbolic link to a directory, not to a session's log file` },
    ]);
  });
});
