import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonFloat, type JsonValue } from '../../src/json/json-value.js';
import { JsonParseError, MAX_JSON_DEPTH, parseJson, parseJsonArrayKeepingItems, parseJsonKeepingMember } from '../../src/json/parse-json.js';

/** The error `parseJson(text)` throws; fails the test when it parses or throws something else. */
function parseError(text: string): JsonParseError {
  try {
    parseJson(text);
  } catch (error) {
    if (error instanceof JsonParseError) return error;
    throw error;
  }
  throw new Error(`expected ${JSON.stringify(text.slice(0, 60))} to be refused`);
}

/** What `JSON.parse` would give for a value without precision problems. */
function toPlain(value: JsonValue): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (value instanceof JsonFloat) return value.value;
  if (Array.isArray(value)) return value.map(toPlain);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toPlain(v)]));
  }
  return value;
}

/** Checks the number representation rules on every number in a parsed value. */
function checkNumbers(value: JsonValue): void {
  if (typeof value === 'number') expect(Number.isSafeInteger(value) || Object.is(value, -0)).toBe(true);
  else if (typeof value === 'bigint') expect(Number.isSafeInteger(Number(value))).toBe(false);
  else if (value instanceof JsonFloat) expect(value.text).toMatch(/[.eE]/);
  else if (Array.isArray(value)) value.forEach(checkNumbers);
  else if (value !== null && typeof value === 'object') {
    expect(Object.getPrototypeOf(value)).toBe(null);
    Object.values(value).forEach(checkNumbers);
  }
}

describe('parseJson: values', () => {
  it('parses the literals', () => {
    expect(parseJson('null')).toBe(null);
    expect(parseJson('true')).toBe(true);
    expect(parseJson('false')).toBe(false);
  });

  it('parses safe integers as numbers', () => {
    expect(parseJson('0')).toBe(0);
    expect(Object.is(parseJson('0'), 0)).toBe(true);
    expect(parseJson('42')).toBe(42);
    expect(parseJson('-17')).toBe(-17);
    expect(parseJson('999999999999999')).toBe(999999999999999); // 15 digits, the fast path
    expect(parseJson('-999999999999999')).toBe(-999999999999999);
    expect(parseJson('1000000000000000')).toBe(1000000000000000); // 16 digits, still safe
    expect(parseJson('9007199254740991')).toBe(Number.MAX_SAFE_INTEGER);
    expect(parseJson('-9007199254740991')).toBe(Number.MIN_SAFE_INTEGER);
  });

  it('keeps -0 as the number -0 (as JSON.parse does)', () => {
    expect(Object.is(parseJson('-0'), -0)).toBe(true);
    expect(Object.is((parseJson('[-0]') as JsonValue[])[0], -0)).toBe(true);
  });

  it('parses integers beyond 2^53 as exact bigints', () => {
    expect(parseJson('9007199254740992')).toBe(9007199254740992n);
    expect(parseJson('9007199254740993')).toBe(9007199254740993n);
    expect(parseJson('-9007199254740992')).toBe(-9007199254740992n);
    expect(parseJson('-9007199254740993')).toBe(-9007199254740993n);
    expect(parseJson('100000000000000000000')).toBe(10n ** 20n);
    expect(parseJson('123456789012345678901234567890')).toBe(123456789012345678901234567890n);
    expect(parseJson('-18446744073709551616')).toBe(-18446744073709551616n);
  });

  it('reads total_tokens of 2^64-1 exactly', () => {
    const value = parseJson('{"total_tokens": 18446744073709551615}') as Record<string, JsonValue>;
    expect(value.total_tokens).toBe(18446744073709551615n);
  });

  it('keeps a literal with a fraction or an exponent as a JsonFloat of its text', () => {
    for (const text of ['1.0', '0.5', '-0.0', '2e3', '2E3', '1e+2', '1E-5', '-1.25e-7', '0e0', '1e400', '123.456000']) {
      const value = parseJson(text);
      expect(value, text).toBeInstanceOf(JsonFloat);
      expect((value as JsonFloat).text).toBe(text);
      expect((value as JsonFloat).value).toBe(Number(text));
    }
    expect(parseJson('1.0')).not.toBe(1);
    expect(parseJson('[1, 1.0]')).toEqual([1, new JsonFloat('1.0')]);
  });

  it('parses strings, slicing plain ones and decoding every escape', () => {
    expect(parseJson('""')).toBe('');
    expect(parseJson('"hello world"')).toBe('hello world');
    expect(parseJson('"\\"\\\\\\/\\b\\f\\n\\r\\t"')).toBe('"\\/\b\f\n\r\t');
    expect(parseJson('"a\\nb"')).toBe('a\nb');
    expect(parseJson('"\\n"')).toBe('\n');
    expect(parseJson('"x\\u00e9y\\u00E9z"')).toBe('xéyéz');
    expect(parseJson('"\\u0000"')).toBe('\u0000');
    expect(parseJson('"\\uFFFF\\uffff"')).toBe('\uffff\uffff');
    expect(parseJson('"\\ud83d\\ude00"')).toBe('😀');
    expect(parseJson('"é😀中\u007f"')).toBe('é😀中\u007f');
    expect(parseJson('"\u2028\u2029"')).toBe('\u2028\u2029');
    expect(parseJson('"tail\\\\"')).toBe('tail\\');
  });

  it('accepts escaped lone surrogates and keeps them', () => {
    expect(parseJson('"\\ud800"')).toBe('\ud800');
    expect(parseJson('"\\udc00"')).toBe('\udc00');
    expect(parseJson('"a\\ud83db"')).toBe('a\ud83db');
    expect(parseJson('"\\ude00\\ud83d"')).toBe('\ude00\ud83d');
    expect(parseJson('"\ud800"')).toBe('\ud800'); // a raw one too
  });

  it('round-trips every UTF-16 unit written as a \\u escape', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 0xffff })), fc.boolean(), (units, upper) => {
        const expected = String.fromCharCode(...units);
        const escaped = units
          .map((u) => {
            const hex = u.toString(16).padStart(4, '0');
            return `\\u${upper ? hex.toUpperCase() : hex}`;
          })
          .join('');
        expect(parseJson(`"${escaped}"`)).toBe(expected);
      }),
    );
  });

  it('parses arrays and objects, keeping key order', () => {
    expect(parseJson('[]')).toEqual([]);
    expect(parseJson('{}')).toEqual({});
    expect(parseJson('[1,"a",null,[true],{}]')).toEqual([1, 'a', null, [true], {}]);
    const object = parseJson('{"b":1,"a":{"d":[],"c":2}}') as Record<string, JsonValue>;
    expect(Object.keys(object)).toEqual(['b', 'a']);
    expect(Object.keys(object.a as object)).toEqual(['d', 'c']);
  });

  it('accepts exactly space, tab, LF and CR as white space, everywhere it may go', () => {
    const ws = ' \t\n\r';
    const text = `${ws}{${ws}"a"${ws}:${ws}[${ws}1${ws},${ws}"x"${ws}]${ws},${ws}"b"${ws}:${ws}{${ws}}${ws}}${ws}`;
    expect(parseJson(text)).toEqual({ a: [1, 'x'], b: {} });
    expect(parseJson(' [ ] ')).toEqual([]);
  });

  it('makes objects with a null prototype at every depth', () => {
    const value = parseJson('{"a":[{"b":{}}]}') as Record<string, JsonValue>;
    expect(Object.getPrototypeOf(value)).toBe(null);
    const inner = (value.a as JsonValue[])[0] as Record<string, JsonValue>;
    expect(Object.getPrototypeOf(inner)).toBe(null);
    expect(Object.getPrototypeOf(inner.b)).toBe(null);
  });

  it('treats __proto__ as an ordinary key and pollutes nothing', () => {
    const value = parseJson('{"__proto__": {"polluted": true}, "x": 1}') as Record<string, JsonValue>;
    expect(Object.getPrototypeOf(value)).toBe(null);
    expect(Object.keys(value)).toEqual(['__proto__', 'x']);
    expect(Object.getOwnPropertyDescriptor(value, '__proto__')?.value).toEqual({ polluted: true });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
  });

  it('treats names of Object.prototype members as ordinary keys', () => {
    const value = parseJson('{"constructor":1,"toString":2,"hasOwnProperty":3,"valueOf":null}') as Record<
      string,
      JsonValue
    >;
    expect(Object.entries(value)).toEqual([
      ['constructor', 1],
      ['toString', 2],
      ['hasOwnProperty', 3],
      ['valueOf', null],
    ]);
  });
});

describe('parseJson: syntax errors', () => {
  const cases: [text: string, message: string, column: number][] = [
    // running out of input
    ['', 'unexpected end of input', 1],
    ['  ', 'unexpected end of input', 3],
    ['{', 'unexpected end of input', 2],
    ['[1,', 'unexpected end of input', 4],
    ['{"a"', 'unexpected end of input', 5],
    ['{"a":', 'unexpected end of input', 6],
    ['{"a":1', 'unexpected end of input', 7],
    ['"abc', 'unexpected end of input', 5],
    ['"a\\', 'unexpected end of input', 4],
    ['"\\u12', 'unexpected end of input', 6],
    ['tru', 'unexpected end of input', 4],
    ['-', 'unexpected end of input', 2],
    ['1.', 'unexpected end of input', 3],
    ['1e', 'unexpected end of input', 3],
    ['1e+', 'unexpected end of input', 4],
    // structure
    ['x', "unexpected character 'x' at column 1", 1],
    ['[1,]', "unexpected character ']' at column 4", 4],
    ['{"a":1,}', "unexpected character '}' at column 8", 8],
    ['[,1]', "unexpected character ',' at column 2", 2],
    ['{,}', "unexpected character ',' at column 2", 2],
    ['[1 2]', "unexpected character '2' at column 4", 4],
    ['[1:2]', "unexpected character ':' at column 3", 3],
    ['{"a" 1}', "unexpected character '1' at column 6", 6],
    ['{"a":1 "b":2}', `unexpected character '"' at column 8`, 8],
    ['{"a"=1}', "unexpected character '=' at column 5", 5],
    ['{a:1}', "unexpected character 'a' at column 2", 2],
    ['{1:1}', "unexpected character '1' at column 2", 2],
    ['{"a":}', "unexpected character '}' at column 6", 6],
    ['[}', "unexpected character '}' at column 2", 2],
    ['{]', "unexpected character ']' at column 2", 2],
    ["{'a':1}", `unexpected character "'" at column 2`, 2],
    ["'a'", `unexpected character "'" at column 1`, 1],
    // trailing text
    ['1 2', "unexpected character '2' at column 3", 3],
    ['{}}', "unexpected character '}' at column 3", 3],
    ['[] x', "unexpected character 'x' at column 4", 4],
    ['"a""b"', `unexpected character '"' at column 4`, 4],
    ['nulls', "unexpected character 's' at column 5", 5],
    ['1.5.3', "unexpected character '.' at column 4", 4],
    // numbers
    ['01', 'leading zero in number at column 1', 1],
    ['-01', 'leading zero in number at column 2', 2],
    ['[00]', 'leading zero in number at column 2', 2],
    ['[1, 007]', 'leading zero in number at column 5', 5],
    ['.5', "unexpected character '.' at column 1", 1],
    ['+1', "unexpected character '+' at column 1", 1],
    ['-a', "unexpected character 'a' at column 2", 2],
    ['- 1', 'unexpected character U+0020 at column 2', 2],
    ['1.e5', "unexpected character 'e' at column 3", 3],
    ['1.]', "unexpected character ']' at column 3", 3],
    ['1ee', "unexpected character 'e' at column 3", 3],
    ['1e+-2', "unexpected character '-' at column 4", 4],
    ['0x10', "unexpected character 'x' at column 2", 2],
    ['1_000', "unexpected character '_' at column 2", 2],
    ['NaN', "unexpected character 'N' at column 1", 1],
    ['Infinity', "unexpected character 'I' at column 1", 1],
    ['-Infinity', "unexpected character 'I' at column 2", 2],
    // literals
    ['True', "unexpected character 'T' at column 1", 1],
    ['nulL', "unexpected character 'L' at column 4", 4],
    ['fals', 'unexpected end of input', 5],
    ['undefined', "unexpected character 'u' at column 1", 1],
    // comments
    ['/* c */ 1', "unexpected character '/' at column 1", 1],
    ['1 // c', "unexpected character '/' at column 3", 3],
    ['[1, # c\n]', "unexpected character '#' at column 5", 5],
    // strings
    ['"a\nb"', 'unescaped control character U+000A in string at column 3', 3],
    ['"\t"', 'unescaped control character U+0009 in string at column 2', 2],
    ['"\u0000"', 'unescaped control character U+0000 in string at column 2', 2],
    ['"\u001f"', 'unescaped control character U+001F in string at column 2', 2],
    ['"\\n\u0001"', 'unescaped control character U+0001 in string at column 4', 4],
    ['"\\x41"', "invalid escape '\\x' at column 2", 2],
    ['"\\U0041"', "invalid escape '\\U' at column 2", 2],
    ['"\\\'"', "invalid escape '\\'' at column 2", 2],
    ['"\\\n"', 'invalid escape at column 2', 2],
    ['"a\\nb\\qc"', "invalid escape '\\q' at column 6", 6],
    ['"\\u12G4"', 'invalid \\u escape at column 2', 2],
    ['"\\u12"', 'invalid \\u escape at column 2', 2],
    ['"\\u-123"', 'invalid \\u escape at column 2', 2],
    ['"\\ud800\\u"', 'invalid \\u escape at column 8', 8],
    // white space that JSON does not allow
    ['\u000b1', 'unexpected character U+000B at column 1', 1],
    ['\u000c1', 'unexpected character U+000C at column 1', 1],
    ['\u00a01', 'unexpected character U+00A0 at column 1', 1],
    ['\ufeff{}', 'unexpected character U+FEFF at column 1', 1],
    ['1\u2028', 'unexpected character U+2028 at column 2', 2],
    // other characters
    ['é', 'unexpected character U+00E9 at column 1', 1],
    ['[😀]', 'unexpected character U+1F600 at column 2', 2],
  ];

  it.each(cases)('refuses %j: %s', (text, message, column) => {
    const error = parseError(text);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('JsonParseError');
    expect(error.code).toBe('syntax');
    expect(error.message).toBe(message);
    expect(error.column).toBe(column);
    expect(error.line).toBe(1);
    expect(error.offset).toBe(column - 1);
  });

  it('counts lines and columns on LF, CRLF and CR', () => {
    const lf = parseError('{\n  "a": 1,\n  "b": x\n}');
    expect(lf.message).toBe("unexpected character 'x' at line 3, column 8");
    expect([lf.line, lf.column, lf.offset]).toEqual([3, 8, 19]);

    const crlf = parseError('[\r\n1,\r\n]');
    expect(crlf.message).toBe("unexpected character ']' at line 3, column 1");
    expect([crlf.line, crlf.column, crlf.offset]).toEqual([3, 1, 7]);

    const cr = parseError('[\r1,\r]');
    expect([cr.line, cr.column, cr.offset]).toEqual([3, 1, 5]);

    const eof = parseError('[\n1,\n');
    expect(eof.message).toBe('unexpected end of input');
    expect([eof.line, eof.column, eof.offset]).toEqual([3, 1, 5]);
  });
});

describe('parseJson: duplicate keys', () => {
  const cases: [text: string, message: string, column: number][] = [
    ['{"turn":1,"turn":2}', 'duplicate key "turn" in object at $ (column 11)', 11],
    ['{"a":null,"a":null}', 'duplicate key "a" in object at $ (column 11)', 11],
    ['{"message":{"role":"user","turn":1,"turn":2}}', 'duplicate key "turn" in object at $.message (column 36)', 36],
    ['{"calls":[{},{},{"id":1,"id":2}]}', 'duplicate key "id" in object at $.calls[2] (column 25)', 25],
    ['[[{"a":{"b":[0,{"k":1,"k":1}]}}]]', 'duplicate key "k" in object at $[0][0].a.b[1] (column 23)', 23],
    ['{"a b":{"x-y":{"k":1,"k":2}}}', 'duplicate key "k" in object at $["a b"]["x-y"] (column 22)', 22],
    ['{"":{"k":1,"k":2}}', 'duplicate key "k" in object at $[""] (column 12)', 12],
    ['{"0":{"k":1,"k":2}}', 'duplicate key "k" in object at $["0"] (column 13)', 13],
    ['{"$ok":{"_k":1,"_k":2}}', 'duplicate key "_k" in object at $.$ok (column 16)', 16],
    ['{"a":1,"\\u0061":2}', 'duplicate key "a" in object at $ (column 8)', 8],
    ['{"__proto__":1,"__proto__":2}', 'duplicate key "__proto__" in object at $ (column 16)', 16],
    ['{"a\\"b":1,"a\\"b":2}', 'duplicate key "a\\"b" in object at $ (column 11)', 11],
    ['{"a":{"x":1},"b":{"x":1},"a":2}', 'duplicate key "a" in object at $ (column 26)', 26],
    ['{"\\ud800":1,"\\ud800":2}', 'duplicate key "\\ud800" in object at $ (column 13)', 13],
  ];

  it.each(cases)('refuses %j', (text, message, column) => {
    const error = parseError(text);
    expect(error.code).toBe('duplicate_key');
    expect(error.message).toBe(message);
    expect(error.column).toBe(column);
    expect(error.offset).toBe(column - 1);
  });

  it('gives the line on multi-line input', () => {
    const error = parseError('{\n  "a": {\n    "k": 1,\n    "k": 2\n  }\n}');
    expect(error.message).toBe('duplicate key "k" in object at $.a (line 4, column 5)');
    expect([error.line, error.column]).toEqual([4, 5]);
  });

  it('allows the same key in different objects', () => {
    expect(parseJson('[{"a":1},{"a":2}]')).toEqual([{ a: 1 }, { a: 2 }]);
    expect(parseJson('{"a":{"a":{"a":1}}}')).toEqual({ a: { a: { a: 1 } } });
    expect(parseJson('{"a":1,"A":2,"a ":3}')).toEqual({ a: 1, A: 2, 'a ': 3 });
  });

  it('shortens a very long key in the message', () => {
    const key = 'k'.repeat(200);
    const error = parseError(`{"${key}":1,"${key}":2}`);
    expect(error.code).toBe('duplicate_key');
    expect(error.message).toMatch(/^duplicate key "k{76}…" in object at \$ \(column 207\)$/);
  });

  it('finds a duplicate at the deepest allowed level', () => {
    const depth = MAX_JSON_DEPTH;
    const text = '['.repeat(depth - 1) + '{"k":1,"k":2}' + ']'.repeat(depth - 1);
    const error = parseError(text);
    expect(error.code).toBe('duplicate_key');
    expect(error.message).toBe(`duplicate key "k" in object at $${'[0]'.repeat(depth - 1)} (column ${depth + 7})`);
  });

  it('prefers the first error in the text', () => {
    expect(parseError('{"a":1,"a":2,}').code).toBe('duplicate_key');
    expect(parseError('{"a":1,,"a":2}').code).toBe('syntax');
  });
});

describe('parseJson: nesting depth', () => {
  it(`accepts ${MAX_JSON_DEPTH} levels of arrays and of objects`, () => {
    let value = parseJson('['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH));
    let levels = 0;
    while (Array.isArray(value)) {
      levels++;
      value = value[0] as JsonValue;
    }
    expect(levels).toBe(MAX_JSON_DEPTH);

    const objects = parseJson('{"a":'.repeat(MAX_JSON_DEPTH - 1) + '{}' + '}'.repeat(MAX_JSON_DEPTH - 1));
    expect(objects).toBeTypeOf('object');
  });

  it(`refuses ${MAX_JSON_DEPTH + 1} levels with too_deep at the opening bracket`, () => {
    const n = MAX_JSON_DEPTH + 1;
    const arrays = parseError('['.repeat(n) + ']'.repeat(n));
    expect(arrays.code).toBe('too_deep');
    expect(arrays.message).toBe('nesting deeper than 512 levels in one event at column 513');
    expect(arrays.column).toBe(513);
    expect(arrays.offset).toBe(512);

    const objects = parseError('{"a":'.repeat(n) + '1' + '}'.repeat(n));
    expect(objects.code).toBe('too_deep');
    expect(objects.column).toBe(5 * MAX_JSON_DEPTH + 1);
  });

  it('refuses 100000 open brackets without overflowing the stack', () => {
    const error = parseError('['.repeat(100_000));
    expect(error.code).toBe('too_deep');
    expect(error.column).toBe(513);
    expect(parseError('{"a":['.repeat(100_000)).code).toBe('too_deep');
    expect(parseError('['.repeat(100_000) + ']'.repeat(100_000)).code).toBe('too_deep');
  });
});

describe('parseJson: properties', () => {
  it('agrees with JSON.parse on what JSON.stringify writes', () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: 'binary' }), fc.boolean(), (value, pretty) => {
        const text = pretty ? JSON.stringify(value, null, 2) : JSON.stringify(value);
        const parsed = parseJson(text);
        expect(toPlain(parsed)).toEqual(JSON.parse(text));
        checkNumbers(parsed);
      }),
      { numRuns: 500 },
    );
  });

  it('agrees with JSON.parse on safe integers and on integers beyond 2^53', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }), (n) => {
        const parsed = parseJson(n.toString());
        if (n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER)) {
          expect(parsed).toBe(Number(n));
        } else {
          expect(parsed).toBe(n);
        }
      }),
    );
  });

  it('accepts and refuses the same texts as JSON.parse (duplicates and depth aside)', () => {
    const unit = fc.constantFrom(...'{}[]",:0123456789-+.eE truefalsn\\u/\t\n\r\'xaAF\u0000\u00a0'.split(''));
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 30 }), (text) => {
        let expected: unknown;
        let jsonParseRefused = false;
        try {
          expected = JSON.parse(text);
        } catch {
          jsonParseRefused = true;
        }
        let parsed: JsonValue;
        try {
          parsed = parseJson(text);
        } catch (error) {
          expect(error).toBeInstanceOf(JsonParseError);
          if (!jsonParseRefused) expect((error as JsonParseError).code).not.toBe('syntax');
          return;
        }
        expect(jsonParseRefused).toBe(false);
        expect(toPlain(parsed)).toEqual(expected);
      }),
      { numRuns: 3000 },
    );
  });

  it('throws only JsonParseError on mangled JSON', () => {
    const mangled = fc
      .tuple(fc.jsonValue(), fc.nat(), fc.nat({ max: 3 }), fc.string({ maxLength: 3, unit: 'binary' }))
      .map(([value, at, cut, insert]) => {
        const text = JSON.stringify(value);
        const i = at % (text.length + 1);
        return text.slice(0, i) + insert + text.slice(i + cut);
      });
    fc.assert(
      fc.property(mangled, (text) => {
        try {
          checkNumbers(parseJson(text));
        } catch (error) {
          expect(error).toBeInstanceOf(JsonParseError);
          const { offset, column, line } = error as JsonParseError;
          expect(offset).toBeGreaterThanOrEqual(0);
          expect(offset).toBeLessThanOrEqual(text.length);
          expect(column).toBeGreaterThanOrEqual(1);
          expect(line).toBeGreaterThanOrEqual(1);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe('parseJsonKeepingMember', () => {
  it('gives back the source text of one top-level member, as written', () => {
    const text = '{"seq": 3, "event" :  {"kind":"x", "n": 18446744073709551615, "f": 1.50}  , "z": [1]}';
    const { value, memberText } = parseJsonKeepingMember(text, 'event');
    expect(memberText).toBe('{"kind":"x", "n": 18446744073709551615, "f": 1.50}');
    expect(parseJson(memberText!)).toEqual((value as Record<string, unknown>).event);
  });

  it('keeps only a top-level member, and nothing when there is none', () => {
    expect(parseJsonKeepingMember('{"a": {"event": 1}}', 'event').memberText).toBeUndefined();
    expect(parseJsonKeepingMember('[{"event": 1}]', 'event').memberText).toBeUndefined();
    expect(parseJsonKeepingMember('{"event": "text"}', 'event').memberText).toBe('"text"');
  });

  it('refuses what parseJson refuses', () => {
    expect(() => parseJsonKeepingMember('{"event": 1, "event": 2}', 'event')).toThrow(/duplicate key "event"/);
    expect(() => parseJsonKeepingMember('{"event": {}', 'event')).toThrow(JsonParseError);
  });
});

describe('parseJsonArrayKeepingItems', () => {
  it('gives back the source text of each item, as written, and where it starts', () => {
    const text = '[ {"kind": "a", "n": 1.0},\n  2 ]';
    expect(parseJsonArrayKeepingItems(text)).toEqual({
      items: [
        { value: parseJson('{"kind": "a", "n": 1.0}'), text: '{"kind": "a", "n": 1.0}', offset: 2 },
        { value: 2, text: '2', offset: 29 },
      ],
    });
  });

  it(`lets an item nest ${MAX_JSON_DEPTH} levels, as a text given alone, and no deeper`, () => {
    const item = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
    expect(parseJsonArrayKeepingItems(`[${item(MAX_JSON_DEPTH)}]`)).toMatchObject({ items: [{ text: item(MAX_JSON_DEPTH) }] });
    expect(() => parseJsonArrayKeepingItems(`[${item(MAX_JSON_DEPTH + 1)}]`)).toThrow('nesting deeper than 512 levels in one event');
  });
});
