import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isJsonObject, type JsonValue } from '../../src/json/json-value.js';
import { parseJson } from '../../src/json/parse-json.js';
import { type JsonObjectScan, scanJsonObject } from '../../src/json/scan-json.js';

const EVENT_COLUMNS = ['kind', 'turn'];

/** Fails unless `scan` says of `text` only what `parseJson` reads there. */
function expectTrueTo(text: string, scan: JsonObjectScan): void {
  const value = parseJson(text);
  if (!isJsonObject(value)) throw new Error(`scanned a text that is no object: ${text}`);
  expect(scan.members.map((member) => member.key)).toEqual(Object.keys(value));
  for (const { key, start, end } of scan.members) expect(parseJson(text.slice(start, end))).toEqual(value[key]);
  const inner: JsonValue | undefined = value['event'];
  if (!isJsonObject(inner)) {
    expect(scan.innerMembers).toBeNull();
    return;
  }
  expect(scan.innerMembers).toHaveLength(EVENT_COLUMNS.length);
  scan.innerMembers!.forEach((member, index) => {
    const key = EVENT_COLUMNS[index]!;
    if (member === undefined) return expect(key in inner).toBe(false);
    expect(member.key).toBe(key);
    expect(parseJson(text.slice(member.start, member.end))).toEqual(inner[key]);
  });
}

/** Whether every key of `value`, at any depth, is written without an escape. */
function keysArePlain(value: unknown): boolean {
  if (Array.isArray(value)) return value.every(keysArePlain);
  if (value === null || typeof value !== 'object') return true;
  return Object.entries(value).every(([key, member]) => !/[\\"\u0000-\u001f]/.test(key) && keysArePlain(member));
}

/** Text `parseJson` accepts or refuses, as near to an envelope as random text gets. */
const mangledEnvelope = fc
  .tuple(
    fc.record({ seq: fc.jsonValue(), event: fc.oneof(fc.dictionary(fc.constantFrom('kind', 'turn', 'a', 'b', 'k\u00e9'), fc.jsonValue()), fc.jsonValue()) }),
    fc.nat(),
    fc.nat({ max: 3 }),
    fc.string({ maxLength: 3, unit: fc.constantFrom(...'{}[]",:0-.e \\u\t\u0000\u00e9'.split('')) }),
    fc.boolean(),
  )
  .map(([value, at, cut, insert, spaced]) => {
    const text = spaced ? JSON.stringify(value, null, 1).replaceAll('\n', ' ') : JSON.stringify(value);
    const i = at % (text.length + 1);
    return text.slice(0, i) + insert + text.slice(i + cut);
  });

describe('scanJsonObject', () => {
  it('says where the members and the inner object\'s columns stand', () => {
    const text = '{"seq":3,"event":{"kind":"x","turn":2}}';
    const scan = scanJsonObject(text, 'event', EVENT_COLUMNS)!;
    expect(scan.members).toEqual([
      { key: 'seq', start: 7, end: 8 },
      { key: 'event', start: 17, end: 38 },
    ]);
    expect(scan.innerMembers).toEqual([
      { key: 'kind', start: 25, end: 28 },
      { key: 'turn', start: 36, end: 37 },
    ]);
    expect(scan.innerHasWhiteSpace).toBe(false);
    expectTrueTo(text, scan);
  });

  it('tells white space between the inner value\'s tokens from white space in its strings or around it', () => {
    expect(scanJsonObject('{ "seq" : 1 , "event" : {"kind":"a b"} }', 'event', EVENT_COLUMNS)!.innerHasWhiteSpace).toBe(false);
    expect(scanJsonObject('{"seq":1,"event":{"kind": "x"}}', 'event', EVENT_COLUMNS)!.innerHasWhiteSpace).toBe(true);
    expect(scanJsonObject('{"seq":1,"event":{"kind":"x","a":[1, 2]}}', 'event', EVENT_COLUMNS)!.innerHasWhiteSpace).toBe(true);
  });

  it('gives no inner members when the inner value is no object', () => {
    expect(scanJsonObject('{"event":[{"kind":"x"}]}', 'event', EVENT_COLUMNS)!.innerMembers).toBeNull();
    expect(scanJsonObject('{"a":{"event":{"kind":"x"}}}', 'event', EVENT_COLUMNS)!.innerMembers).toBeNull();
  });

  it('gives up on what parseJson refuses', () => {
    for (const text of [
      '{"a":1,"a":2}',
      '{"event":{"kind":"x","kind":"y"}}',
      '{"a":[{"b":1,"b":1}]}',
      '{"a":01}',
      '{"a":1.}',
      '{"a":-}',
      '{"a":1e}',
      '{"a":"\\x"}',
      '{"a":"\\u12g4"}',
      '{"a":"b\u0001"}',
      '{"a":tru}',
      '{"a":1,}',
      '{"a":[1,]}',
      '{"a":1} x',
      '{"a":"b}',
      '{"a"',
      '\ufeff{}',
    ]) {
      expect(() => parseJson(text), text).toThrow();
      expect(scanJsonObject(text, 'event', EVENT_COLUMNS), text).toBeUndefined();
    }
  });

  it('gives up on valid text it does not follow: escaped or long keys, many members, deep nesting, tabs, a top level that is no object', () => {
    const manyMembers = `{${Array.from({ length: 65 }, (_, i) => `"k${i}":${i}`).join(',')}}`;
    const deep = `{"a":${'['.repeat(64)}${']'.repeat(64)}}`;
    const longKey = `{"${'k'.repeat(257)}":1}`;
    for (const text of ['{"\\u0061":1,"a":2}', '{"k\\n":1}', manyMembers, deep, longKey, '{"a":\t1}', '[1]', '"x"']) {
      expect(scanJsonObject(text, 'event', EVENT_COLUMNS), text.slice(0, 40)).toBeUndefined();
    }
    const shallower = `{"a":${'['.repeat(63)}${']'.repeat(63)}}`;
    expect(scanJsonObject(shallower, 'event', EVENT_COLUMNS)).toBeDefined();
    expect(scanJsonObject(`{"${'k'.repeat(256)}":1}`, 'event', EVENT_COLUMNS)).toBeDefined();
    expect(scanJsonObject(`{${Array.from({ length: 64 }, (_, i) => `"k${i}":${i}`).join(',')}}`, 'event', EVENT_COLUMNS)).toBeDefined();
  });

  it('follows escapes in strings, and a key that is a prefix or a copy of another in another object', () => {
    const text = '{"event":{"kind":"a\\"b\\\\","turn":1,"k":{"kind":2,"kin":3}},"seq":"\\u00e9\\n\\/"}';
    expectTrueTo(text, scanJsonObject(text, 'event', EVENT_COLUMNS)!);
  });

  it('scans every line of the samples, saying what parseJson reads there', () => {
    const samples = path.join(import.meta.dirname, '../../samples');
    let lines = 0;
    for (const name of readdirSync(samples).filter((file) => file.endsWith('.jsonl'))) {
      for (const line of readFileSync(path.join(samples, name), 'utf8').split('\n')) {
        if (line === '') continue;
        const scan = scanJsonObject(line, 'event', EVENT_COLUMNS);
        expect(scan, `${name}: ${line.slice(0, 80)}`).toBeDefined();
        expectTrueTo(line, scan!);
        lines++;
      }
    }
    expect(lines).toBeGreaterThan(100);
  });

  it('never accepts a text parseJson refuses, and says only what parseJson reads where it accepts one', () => {
    fc.assert(
      fc.property(mangledEnvelope, (text) => {
        const scan = scanJsonObject(text, 'event', EVENT_COLUMNS);
        if (scan !== undefined) expectTrueTo(text, scan);
      }),
      { numRuns: 5000 },
    );
  });

  it('accepts what JSON.stringify writes of objects with plain keys', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 5 }), { maxKeys: 20 }), (value) => {
        fc.pre(keysArePlain(value));
        const text = JSON.stringify({ seq: 1, event: value });
        const scan = scanJsonObject(text, 'event', EVENT_COLUMNS);
        expect(scan).toBeDefined();
        expectTrueTo(text, scan!);
      }),
      { numRuns: 1000 },
    );
  });
});
