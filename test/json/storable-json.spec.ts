import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonFloat, type JsonObject, type JsonValue } from '../../src/json/json-value.js';
import { parseJson } from '../../src/json/parse-json.js';
import { fitsPostgresNumeric, hasUnstorableChar, storableSourceText, toStorableJson } from '../../src/json/storable-json.js';
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

/** What PostgreSQL's jsonb would refuse in a JSON text: a \u0000 escape or a lone surrogate, raw or escaped. */
function jsonbWouldRefuse(text: string): boolean {
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

describe('toStorableJson', () => {
  it('gives exactText null and the exact payload for clean input', () => {
    const value = parseJson(
      '{"kind":"text","turn":3,"total_tokens":18446744073709551615,"cost":1.0,"s":"é😀\\n\\"","a":[null,true,{}]}',
    );
    const storable = toStorableJson(value);
    expect(storable.exactText).toBeNull();
    expect(storable.payload).toBe(stringifyJson(value));
    expect(storable.payload).toBe(
      '{"kind":"text","turn":3,"total_tokens":18446744073709551615,"cost":1.0,"s":"é😀\\n\\"","a":[null,true,{}]}',
    );
  });

  it('leaves a valid surrogate pair alone, escaped or raw in the source', () => {
    const storable = toStorableJson(parseJson('{"e":"\\ud83d\\ude00","r":"😀"}'));
    expect(storable).toEqual({ payload: '{"e":"😀","r":"😀"}', exactText: null });
  });

  it('replaces U+0000 in a nested string and keeps the exact text', () => {
    const value = parseJson('{"event":{"calls":[{"out":"a\\u0000b"}]}}');
    const storable = toStorableJson(value);
    expect(storable.payload).toBe('{"event":{"calls":[{"out":"a\ufffdb"}]}}');
    expect(storable.exactText).toBe('{"event":{"calls":[{"out":"a\\u0000b"}]}}');
    expect(parseJson(storable.exactText as string)).toEqual(value);
  });

  it('replaces U+0000 in a key', () => {
    const value = parseJson('{"ok":1,"nested":{"k\\u0000":"v"}}');
    const storable = toStorableJson(value);
    expect(storable.payload).toBe('{"ok":1,"nested":{"k\ufffd":"v"}}');
    expect(storable.exactText).toBe('{"ok":1,"nested":{"k\\u0000":"v"}}');
    expect(parseJson(storable.exactText as string)).toEqual(value);
  });

  it('replaces lone high and low surrogates in strings and keys', () => {
    const value = parseJson('{"h":"x\\ud800y","l":["\\udc00"],"\\udbff":1,"mixed":"😀\\ude00\\ud83d\\ude00\\ud83d"}');
    const storable = toStorableJson(value);
    expect(storable.payload).toBe('{"h":"x\ufffdy","l":["\ufffd"],"\ufffd":1,"mixed":"😀\ufffd😀\ufffd"}');
    expect(storable.exactText).toBe(
      '{"h":"x\\ud800y","l":["\\udc00"],"\\udbff":1,"mixed":"😀\\ude00😀\\ud83d"}',
    );
    expect(jsonbWouldRefuse(storable.payload)).toBe(false);
    expect(jsonbWouldRefuse(storable.exactText as string)).toBe(true); // it is for a text column
    expect(parseJson(storable.exactText as string)).toEqual(value);
  });

  it('sanitizes a bare string value', () => {
    expect(toStorableJson('\u0000')).toEqual({ payload: '"\ufffd"', exactText: '"\\u0000"' });
    expect(toStorableJson('ok')).toEqual({ payload: '"ok"', exactText: null });
    expect(toStorableJson(18446744073709551615n)).toEqual({ payload: '18446744073709551615', exactText: null });
  });

  it('may repeat a key in payload when replacing makes two keys equal; exactText keeps both', () => {
    const value = parseJson('{"a\\u0000":1,"a\\ud800":2}');
    const storable = toStorableJson(value);
    expect(storable.payload).toBe('{"a\ufffd":1,"a\ufffd":2}');
    expect(parseJson(storable.exactText as string)).toEqual(value);
  });

  it('always gives a jsonb-safe payload and a lossless way back (property)', () => {
    fc.assert(
      fc.property(anyJson, (value) => {
        const { payload, exactText } = toStorableJson(value);
        expect(jsonbWouldRefuse(payload)).toBe(false);
        const dirty = allStrings(value).some(hasUnstorableChar);
        expect(exactText === null).toBe(!dirty);
        if (exactText === null) {
          expect(payload).toBe(stringifyJson(value));
          expect(parseJson(payload)).toEqual(value);
        } else {
          expect(exactText).toBe(stringifyJson(value));
          expect(parseJson(exactText)).toEqual(value);
          expect(payload.length).toBeLessThanOrEqual(exactText.length);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('writes numbers beyond PostgreSQL numeric as strings in payload and keeps them in exactText', () => {
    const value = parseJson('{"huge":1e131072,"tiny":1e-20000,"long":' + '9'.repeat(131_073) + ',"ok":1e1000,"fine":12.5}');
    const { payload, exactText } = toStorableJson(value);
    const stored = JSON.parse(payload) as Record<string, unknown>;
    expect(stored.huge).toBe('1e131072');
    expect(stored.tiny).toBe('1e-20000');
    expect(stored.long).toBe('9'.repeat(131_073));
    expect(payload).toContain('"ok":1e1000,"fine":12.5');
    expect(parseJson(exactText!)).toEqual(value);
  });

  it.each([
    ['1', true],
    ['1e131071', true],
    ['1e131072', false],
    ['0.5e-16382', true],
    ['1e-16384', false],
    ['-12.25E+3', true],
  ])('knows whether jsonb holds %s', (literal, fits) => {
    expect(fitsPostgresNumeric(literal)).toBe(fits);
  });
});

describe('storableSourceText', () => {
  it('takes the source as it is when jsonb can hold it', () => {
    expect(storableSourceText('{"a": 18446744073709551615, "b": 1.50, "c": "\\ud83d\\ude00x"}')).toBeUndefined();
    expect(storableSourceText('{"a": 18446744073709551615, "b": 1.50, "c": "x"}')).toEqual({
      payload: '{"a": 18446744073709551615, "b": 1.50, "c": "x"}',
      exactText: null,
    });
  });

  it.each([
    ['U+0000 escaped', '{"a": "x\\u0000"}'],
    ['a lone surrogate escaped', '{"a": "\\udc00"}'],
    ['a long number', `{"a": ${'9'.repeat(70)}}`],
    ['a large exponent', '{"a": 1e131072}'],
  ])('leaves %s to the careful path', (_case, text) => {
    expect(storableSourceText(text)).toBeUndefined();
  });

  it('sends to the careful path exactly the texts one plain pattern matches (property)', () => {
    const reference = /\\u0000|\\u[dD][89a-fA-F]|[0-9]{64}|[0-9][eE][+-]?[0-9]{4}/;
    const piece = fc.oneof(
      fc.constantFrom('\\u', '\\u0000', '\\ud8', '\\uDa', '\\u00e9', 'e', 'E', '+', '-', '"', ' ', 'x'),
      fc.integer({ min: 0, max: 9 }).map(String),
      fc.integer({ min: 1, max: 70 }).map((length) => '7'.repeat(length)),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 30 }), (pieces) => {
        const text = pieces.join('');
        expect(storableSourceText(text) === undefined).toBe(reference.test(text));
      }),
      { numRuns: 2000 },
    );
  });
});
