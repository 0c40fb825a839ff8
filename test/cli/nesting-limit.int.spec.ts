import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../src/json/json-value.js';
import { MAX_JSON_DEPTH } from '../../src/json/parse-json.js';
import { PostgresSessionLog } from '../../src/session-log/postgres-session-log.js';
import { EventStore } from '../../src/store/event-store.js';
import { useTempDir } from '../support/log-files.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();
const tempDir = useTempDir();
const cli = (args: string[], stdin?: string) => runCliInProcess(args, { env: { DATABASE_URL: testDb.url }, stdin });

/** An event `levels` deep: the event object (level 1) holding arrays nested `levels - 1` deep. */
function deepEventText(levels: number): string {
  return `{"kind":"deep","a":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`;
}

function deepEventValue(levels: number): { kind: string; a: JsonValue } {
  let a: JsonValue = [];
  for (let level = 3; level <= levels; level++) a = [a];
  return { kind: 'deep', a };
}

const TOO_DEEP = /nesting deeper than 512 levels in one event/;

describe(`one nesting limit on every path: ${MAX_JSON_DEPTH} levels in one event`, () => {
  const deepest = deepEventText(MAX_JSON_DEPTH);

  it('takes an event 512 levels deep through append (JSONL and a JSON array), EventStore.append and the SessionLog', async () => {
    expect((await cli(['append', 'deep-jsonl'], `${deepest}\n`)).code).toBe(0);
    expect((await cli(['append', 'deep-array'], `[\n${deepest}\n]\n`)).code).toBe(0);
    await new EventStore(testDb.db).append('deep-store', [deepEventValue(MAX_JSON_DEPTH)]);
    await new PostgresSessionLog(testDb.db).append('deep-sdk', deepEventValue(MAX_JSON_DEPTH));
    for (const session of ['deep-jsonl', 'deep-array', 'deep-store', 'deep-sdk']) {
      expect((await cli(['events', session, '--bare'])).stdout, session).toBe(`${deepest}\n`);
    }
  });

  it('imports what `events` prints of it again: as a directory, a single file and a stream', async () => {
    const printed = (await cli(['events', 'deep-jsonl'])).stdout;
    expect(printed).toBe(`{"seq":0,"event":${deepest}}\n`);

    const dir = tempDir();
    writeFileSync(path.join(dir, 'deep-jsonl.jsonl'), printed);
    expect(await cli(['import', dir])).toMatchObject({ code: 0, stdout: expect.stringMatching(/^imported 0 new events; 1 was already stored/) });
    expect(await cli(['import', path.join(dir, 'deep-jsonl.jsonl')])).toMatchObject({ code: 0, stdout: expect.stringMatching(/^imported 0 new events; 1 was already stored/) });

    const stream = printed.replace('{"seq":0,', '{"session_id":"deep-stream","seq":0,');
    expect(await cli(['import', '-'], stream)).toMatchObject({ code: 0, stdout: expect.stringMatching(/^imported 1 new event;/) });
    expect((await cli(['events', 'deep-stream', '--bare'])).stdout).toBe(`${deepest}\n`);
  });

  it('refuses an event 513 levels deep everywhere, with the same words, storing nothing', async () => {
    const tooDeep = deepEventText(MAX_JSON_DEPTH + 1);
    const jsonl = await cli(['append', 'too-deep'], `${tooDeep}\n`);
    expect(jsonl.code).toBe(1);
    expect(jsonl.stderr).toMatch(/<stdin>:1: session "too-deep": nesting deeper than 512 levels in one event at column \d+; nothing was appended/);

    const array = await cli(['append', 'too-deep'], `[\n${deepest},\n${tooDeep}\n]\n`);
    expect(array.code).toBe(1);
    expect(array.stderr).toMatch(/<stdin>:3: session "too-deep": nesting deeper than 512 levels in one event at line 3, column \d+/);

    await expect(new EventStore(testDb.db).append('too-deep', [deepEventValue(MAX_JSON_DEPTH + 1)])).rejects.toThrow(TOO_DEEP);
    await expect(new PostgresSessionLog(testDb.db).append('too-deep', deepEventValue(MAX_JSON_DEPTH + 1))).rejects.toThrow(TOO_DEEP);

    const dir = tempDir();
    writeFileSync(path.join(dir, 'too-deep.jsonl'), `{"seq":0,"event":${tooDeep}}\n`);
    const imported = await cli(['import', dir]);
    expect(imported.code).toBe(1);
    expect(imported.stderr).toMatch(/too-deep\.jsonl:1: session "too-deep": nesting deeper than 512 levels in one event at column \d+/);

    const single = await cli(['import', path.join(dir, 'too-deep.jsonl')]);
    expect(single.code).toBe(1);
    // Its only line cannot tell a session's log from a stream: the error names the line alone.
    expect(single.stderr).toMatch(/too-deep\.jsonl:1: nesting deeper than 512 levels in one event at column \d+/);

    const stream = await cli(['import', '-'], `{"session_id":"too-deep","seq":0,"event":${tooDeep}}\n`);
    expect(stream.code).toBe(1);
    expect(stream.stderr).toMatch(/<stdin>:1: nesting deeper than 512 levels in one event at column \d+/);

    expect((await cli(['events', 'too-deep'])).code).toBe(1);
  });
});
