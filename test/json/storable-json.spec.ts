import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonFloat, type JsonObject, type JsonValue } from '../../src/json/json-value.js';
import { parseJson } from '../../src/json/parse-json.js';
import { escapeLoneSurrogates, hasUnstorableChar, mayHoldUnreadableString, readableStandIn, UNSTORABLE_STRING_KEY } from '../../src/json/storable-json.js';
import { stringifyJson } from '../../src/json/stringify-json.js';

/** A slow, obvious reference for hasUnstorableChar. */
function referenceUnstorable(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0) return true;
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
      else return true;
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      return true;
    }
  }
  return false;
}

/** Every string and key in a value. */
function allStrings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const item of value) allStrings(item, out);
  else if (value !== null && typeof value === 'object' && !(value instanceof JsonFloat)) {
    for (const [key, item] of Object.entries(value)) {
      out.push(key);
      allStrings(item, out);
    }
  }
  return out;
}

/** What PostgreSQL's JSON functions cannot read in a JSON text: a \u0000 escape or a lone surrogate, raw or escaped. */
function sqlCannotRead(text: string): boolean {
  return text.includes('\u0000') || hasUnstorableChar(text) || allStrings(JSON.parse(text)).some(hasUnstorableChar);
}

const utf16Unit = fc.oneof(
  fc.constantFrom('\u0000', '\ud800', '\udbff', '\udc00', '\udfff', '😀', '\ufffd', 'a'),
  fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit)),
  fc.string({ unit: 'grapheme-ascii', maxLength: 1 }),
);
const anyString = fc.string({ unit: utf16Unit, maxLength: 8 });

const { json: anyJson } = fc.letrec<{ json: JsonValue }>((tie) => ({
  json: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.maxSafeInteger(),
    fc.bigInt({ min: 2n ** 53n, max: 2n ** 64n }),
    fc.constantFrom(new JsonFloat('1.0'), new JsonFloat('-2.5e-3')),
    anyString,
    fc.array(tie('json'), { maxLength: 4 }),
    fc.uniqueArray(fc.tuple(anyString, tie('json')), { selector: ([key]) => key, maxLength: 4 }).map((entries) => {
      const object = Object.create(null) as JsonObject;
      for (const [key, value] of entries) object[key] = value;
      return object;
    }),
  ),
}));

describe('hasUnstorableChar', () => {
  it('is false for plain text and valid surrogate pairs', () => {
    for (const s of ['', 'plain', 'é', '中文', '😀', 'a😀b😀', '\ud800\udc00', '\udbff\udfff', '\ufffd', '\u0001\u001f']) {
      expect(hasUnstorableChar(s), JSON.stringify(s)).toBe(false);
    }
  });

  it('is true for U+0000 anywhere', () => {
    for (const s of ['\u0000', 'a\u0000', '\u0000a', 'a\u0000b', '😀\u0000']) {
      expect(hasUnstorableChar(s), JSON.stringify(s)).toBe(true);
    }
  });

  it('is true for lone high and low surrogates', () => {
    const cases = [
      '\ud800', // high at the end
      '\udbff', // highest high
      'a\ud83d', // high after text
      '\ud83db', // high before a non-surrogate
      '\ud800\ud800\udc00', // high followed by a (valid) pair
      '\udc00', // low alone
      '\udfff', // highest low
      'a\ude00b', // low in text
      '\ude00\ud83d', // a pair in the wrong order
      '😀\udc00', // a low after a complete pair
      '\ud83d\ude00\ud83d', // a high after a complete pair
    ];
    for (const s of cases) expect(hasUnstorableChar(s), JSON.stringify(s)).toBe(true);
  });

  it('agrees with a simple reference on any UTF-16 string', () => {
    fc.assert(
      fc.property(anyString, (s) => {
        expect(hasUnstorableChar(s)).toBe(referenceUnstorable(s));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('readableStandIn', () => {
  const unstorable = (text: string) => ({ [UNSTORABLE_STRING_KEY]: text });

  it('is undefined for an event SQL can read as it is, surrogate pairs included', () => {
    expect(readableStandIn(parseJson('{"kind":"x","t":18446744073709551615,"c":1.0,"s":"é😀\\n","a":[null,{}]}') as JsonObject)).toBeUndefined();
    expect(readableStandIn(parseJson('{"kind":"x","e":"\\ud83d\\ude00"}') as JsonObject)).toBeUndefined();
  });

  it('stands an object in for each string holding U+0000 or a lone surrogate, at any depth', () => {
    const event = parseJson('{"kind":"x","out":"a\\u0000b","calls":[{"h":"x\\ud800y"}],"l":["\\udc00",1]}') as JsonObject;
    expect(readableStandIn(event)).toEqual({
      kind: 'x',
      out: unstorable('a\ufffdb'),
      calls: [{ h: unstorable('x\ufffdy') }],
      l: [unstorable('\ufffd'), 1],
    });
  });

  it('puts U+FFFD in keys and in the top-level kind, which stay strings', () => {
    const event = parseJson('{"kind":"odd\\u0000kind","nested":{"k\\u0000":"v","kind":"\\u0000"}}') as JsonObject;
    expect(readableStandIn(event)).toEqual({ kind: 'odd\ufffdkind', nested: { 'k\ufffd': 'v', kind: unstorable('\ufffd') } });
  });

  it('never changes its input', () => {
    const event = parseJson('{"kind":"x","a":["\\u0000"]}') as JsonObject;
    const before = stringifyJson(event);
    readableStandIn(event);
    expect(stringifyJson(event)).toBe(before);
  });

  it('always gives what SQL can read, and nothing when there was nothing to replace (property)', () => {
    fc.assert(
      fc.property(anyJson, (value) => {
        const event = Object.assign(Object.create(null) as JsonObject, { kind: 'x', value });
        const standIn = readableStandIn(event);
        const dirty = allStrings(value).some(hasUnstorableChar);
        expect(standIn === undefined).toBe(!dirty);
        if (standIn !== undefined) expect(sqlCannotRead(stringifyJson(standIn))).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('mayHoldUnreadableString', () => {
  it.each([
    ['U+0000 escaped', '{"a": "x\\u0000"}', true],
    ['a lone surrogate escaped', '{"a": "\\udc00"}', true],
    ['a pair escaped (left to the careful path)', '{"a": "\\ud83d\\ude00"}', true],
    ['a lone surrogate as it is', '{"a": "x\ud800"}', true],
    ['a lone surrogate as it is, in a key', '{"\udc00": 1}', true],
    ['a pair as it is', '{"a": "\ud83d\ude00"}', false],
    ['another escape', '{"a": "\\u00e9"}', false],
    ['no escape at all', '{"a": 18446744073709551615, "b": 1e131072}', false],
  ])('%s: %s', (_case, text, expected) => {
    expect(mayHoldUnreadableString(text)).toBe(expected);
  });

  it('flags exactly the texts one plain pattern matches, or that hold a lone surrogate (property)', () => {
    const reference = /\\u0000|\\u[dD][89a-fA-F]/;
    const piece = fc.constantFrom('\\u', '\\u0000', '\\ud8', '\\uDa', '\\u00e9', 'e', '"', ' ', 'x', '0', '\ud83d', '\ude00', '😀');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 30 }), (pieces) => {
        const text = pieces.join('');
        expect(mayHoldUnreadableString(text)).toBe(reference.test(text) || referenceUnstorable(text));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('escapeLoneSurrogates', () => {
  it('writes each lone surrogate of JSON text as JSON.stringify escapes it, leaving pairs as they are', () => {
    const value = { ['k\udc00']: ['\ud800', 'a\ud83d\ude00b', '\ude00\ud83d', 'plain'] };
    const raw = `{"k\udc00":["\ud800","a\ud83d\ude00b","\ude00\ud83d","plain"]}`;
    expect(escapeLoneSurrogates(raw)).toBe(JSON.stringify(value));
    expect(JSON.parse(escapeLoneSurrogates(raw))).toEqual(JSON.parse(raw));
    expect(escapeLoneSurrogates('{"a":"😀"}')).toBe('{"a":"😀"}');
  });
});
