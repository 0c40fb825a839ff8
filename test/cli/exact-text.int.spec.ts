import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../src/json/json-value.js';
import { parseJson } from '../../src/json/parse-json.js';
import { EventStore } from '../../src/store/event-store.js';
import { useTempDir } from '../support/log-files.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();
const tempDir = useTempDir();
const cli = (args: string[], stdin?: string) => runCliInProcess(args, { env: { DATABASE_URL: testDb.url }, stdin });

/** Number text JSON.parse would rewrite, an escape, keys out of order, white space between tokens and inside a string. */
const WRITTEN = '{"kind": "exact", "z": 1e2, "b": -0.0, "c": 1.0, "d": 18446744073709551615, "e": "\\u00e9 t", "f": -0, "g": [1E-7, 0.10, 2.50e+3]}';
const STORED = '{"kind":"exact","z":1e2,"b":-0.0,"c":1.0,"d":18446744073709551615,"e":"\\u00e9 t","f":-0,"g":[1E-7,0.10,2.50e+3]}';
/** The same with a string SQL cannot read, which makes the store keep a readable stand-in beside the text. */
const WRITTEN_NUL = WRITTEN.replace('"kind": "exact",', '"kind": "exact", "nul": "a\\u0000b",');
const STORED_NUL = STORED.replace('"kind":"exact",', '"kind":"exact","nul":"a\\u0000b",');

/** Above 250 events a write goes through COPY, a path of its own. */
const THROUGH_COPY = 300;

async function printed(session: string): Promise<string[]> {
  const run = await cli(['events', session, '--bare']);
  expect(run.code).toBe(0);
  return run.stdout.trimEnd().split('\n');
}

const envelope = (seq: number, event: string) => `{"seq": ${seq}, "event": ${event}}`;
const alternate = (count: number) => Array.from({ length: count }, (_, i) => (i % 2 === 0 ? WRITTEN : WRITTEN_NUL));
const alternateStored = (count: number) => Array.from({ length: count }, (_, i) => (i % 2 === 0 ? STORED : STORED_NUL));

describe('number text and escapes come back exactly as written, with or without a field that forces the stand-in', () => {
  it('through import (a log folder, in one statement and through COPY; a single file; a stream), and import again', async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'exact-small.jsonl'), `${alternate(2).map((event, seq) => envelope(seq, event)).join('\n')}\n`);
    writeFileSync(path.join(dir, 'exact-copy.jsonl'), `${alternate(THROUGH_COPY).map((event, seq) => envelope(seq, event)).join('\n')}\n`);
    expect((await cli(['import', dir])).code).toBe(0);
    expect(await printed('exact-small')).toEqual(alternateStored(2));
    expect(await printed('exact-copy')).toEqual(alternateStored(THROUGH_COPY));

    const single = path.join(tempDir(), 'exact-single.jsonl');
    writeFileSync(single, `${alternate(2).map((event, seq) => envelope(seq, event)).join('\n')}\n`);
    expect((await cli(['import', single])).code).toBe(0);
    expect(await printed('exact-single')).toEqual(alternateStored(2));

    const stream = alternate(2).map((event, seq) => `{"session_id": "exact-stream", "seq": ${seq}, "event": ${event}}`);
    expect((await cli(['import', '-'], `${stream.join('\n')}\n`)).code).toBe(0);
    expect(await printed('exact-stream')).toEqual(alternateStored(2));

    // What events prints imports again as the same events.
    const again = tempDir();
    writeFileSync(path.join(again, 'exact-copy.jsonl'), (await cli(['events', 'exact-copy'])).stdout);
    expect((await cli(['import', again])).stdout).toMatch(`imported 0 new events; ${THROUGH_COPY} were already stored`);
  });

  it('through append: JSONL, a JSON array, and a large append through COPY', async () => {
    expect((await cli(['append', 'exact-jsonl'], `${alternate(2).join('\n')}\n`)).code).toBe(0);
    expect(await printed('exact-jsonl')).toEqual(alternateStored(2));

    expect((await cli(['append', 'exact-array'], `[${alternate(2).join(',\n')}]`)).code).toBe(0);
    expect(await printed('exact-array')).toEqual(alternateStored(2));

    expect((await cli(['append', 'exact-append-copy'], `${alternate(THROUGH_COPY).join('\n')}\n`)).code).toBe(0);
    expect(await printed('exact-append-copy')).toEqual(alternateStored(THROUGH_COPY));
  });

  it('through EventStore.append of the values parseJson reads: numbers exactly, strings as their characters', async () => {
    await new EventStore(testDb.db).append('exact-values', [parseJson(WRITTEN), parseJson(WRITTEN_NUL)] as JsonValue[]);
    // A value holds no escape, only the character: it is written as JSON.stringify writes it.
    expect(await printed('exact-values')).toEqual(alternateStored(2).map((text) => text.replace('\\u00e9', '\u00e9')));
  });
});
