import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonFloat, type JsonObject, type JsonValue } from '../../src/json/json-value.js';
import { MAX_JSON_DEPTH, parseJson } from '../../src/json/parse-json.js';
import { stringifyJson } from '../../src/json/stringify-json.js';

/** Any UTF-16 unit (lone surrogates and U+0000 included), with the tricky ones more often. */
const utf16Unit = fc.oneof(
  fc.constantFrom('\u0000', '\ud800', '\udbff', '\udc00', '\udfff', '"', '\\', '\n', '\u001f', '\u007f', '\u2028', '😀'),
  fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit)),
  fc.string({ unit: 'grapheme', maxLength: 1 }),
);
const anyString = fc.string({ unit: utf16Unit, maxLength: 12 });

const floatText = fc
  .tuple(
    fc.boolean(),
    fc.oneof(fc.constant('0'), fc.bigInt({ min: 1n, max: 10n ** 30n }).map(String)),
    fc.option(fc.stringMatching(/^[0-9]{1,20}$/), { nil: undefined }),
    fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), fc.stringMatching(/^[0-9]{1,4}$/)), {
      nil: undefined,
    }),
  )
  .filter(([, , fraction, exponent]) => fraction !== undefined || exponent !== undefined)
  .map(
    ([negative, int, fraction, exponent]) =>
      `${negative ? '-' : ''}${int}${fraction === undefined ? '' : `.${fraction}`}${exponent === undefined ? '' : exponent.join('')}`,
  );

/** Every value parseJson can produce. */
const { json: canonicalJson } = fc.letrec<{ json: JsonValue }>((tie) => ({
  json: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.maxSafeInteger(),
    fc.constant(-0),
    fc.oneof(
      fc.bigInt({ min: BigInt(Number.MAX_SAFE_INTEGER) + 1n, max: 2n ** 70n }),
      fc.bigInt({ min: -(2n ** 70n), max: BigInt(Number.MIN_SAFE_INTEGER) - 1n }),
    ),
    floatText.map((text) => new JsonFloat(text)),
    anyString,
    fc.array(tie('json'), { maxLength: 4 }),
    fc
      .uniqueArray(fc.tuple(fc.oneof(anyString, fc.constantFrom('__proto__', 'constructor', '0', '10')), tie('json')), {
        selector: ([key]) => key,
        maxLength: 4,
      })
      .map((entries) => {
        const object = Object.create(null) as JsonObject;
        for (const [key, value] of entries) object[key] = value;
        return object;
      }),
  ),
}));

function nullObject(entries: [string, JsonValue][]): JsonObject {
  const object = Object.create(null) as JsonObject;
  for (const [key, value] of entries) object[key] = value;
  return object;
}

describe('stringifyJson', () => {
  it('writes scalars', () => {
    expect(stringifyJson(null)).toBe('null');
    expect(stringifyJson(true)).toBe('true');
    expect(stringifyJson(false)).toBe('false');
    expect(stringifyJson(0)).toBe('0');
    expect(stringifyJson(-17)).toBe('-17');
    expect(stringifyJson(Number.MAX_SAFE_INTEGER)).toBe('9007199254740991');
    expect(stringifyJson('')).toBe('""');
  });

  it('writes -0 as -0 so that it reads back as -0', () => {
    expect(stringifyJson(-0)).toBe('-0');
    expect(stringifyJson([0, -0])).toBe('[0,-0]');
    expect(Object.is(parseJson(stringifyJson(-0)), -0)).toBe(true);
  });

  it('writes a bigint as its digits', () => {
    expect(stringifyJson(18446744073709551615n)).toBe('18446744073709551615');
    expect(stringifyJson(-9007199254740993n)).toBe('-9007199254740993');
    expect(stringifyJson(5n)).toBe('5');
    expect(stringifyJson({ total_tokens: 18446744073709551615n })).toBe('{"total_tokens":18446744073709551615}');
  });

  it('writes a JsonFloat as its text', () => {
    for (const text of ['1.0', '-0.0', '2e3', '1E+2', '1e400', '0.10', '-1.5e-7']) {
      expect(stringifyJson(new JsonFloat(text))).toBe(text);
    }
    expect(stringifyJson([new JsonFloat('1.0'), 1])).toBe('[1.0,1]');
  });

  it('writes other numbers as JSON.stringify does', () => {
    expect(stringifyJson(0.5)).toBe('0.5');
    expect(stringifyJson(1e21)).toBe('1e+21');
    expect(stringifyJson(2 ** 60)).toBe('1152921504606847000'); // shortest text that reads back as 2 ** 60
    expect(parseJson(stringifyJson(0.5))).toEqual(new JsonFloat('0.5'));
    expect(Number(parseJson(stringifyJson(2 ** 60)))).toBe(2 ** 60);
  });

  it('escapes strings exactly as JSON.stringify does, lone surrogates included', () => {
    const samples = [
      'plain',
      '"quoted" \\ back/slash',
      '\b\f\n\r\t',
      '\u0000\u0001\u001f\u007f',
      '\u2028\u2029',
      'é中😀',
      '\ud800',
      '\udfff',
      'a\ud83db',
      '\ude00\ud83d',
    ];
    for (const s of samples) expect(stringifyJson(s)).toBe(JSON.stringify(s));
    expect(stringifyJson('\ud800')).toBe('"\\ud800"');
    expect(stringifyJson('\u0000')).toBe('"\\u0000"');
    expect(stringifyJson('😀')).toBe('"😀"');
  });

  it('escapes any string as JSON.stringify does (property)', () => {
    fc.assert(
      fc.property(anyString, (s) => {
        expect(stringifyJson(s)).toBe(JSON.stringify(s));
        expect(stringifyJson({ [s]: s })).toBe(JSON.stringify({ [s]: s }));
      }),
      { numRuns: 1000 },
    );
  });

  it('writes compact arrays and objects with keys in insertion order', () => {
    expect(stringifyJson([])).toBe('[]');
    expect(stringifyJson({})).toBe('{}');
    expect(stringifyJson([1, [2, [3]], { a: [] }])).toBe('[1,[2,[3]],{"a":[]}]');
    expect(stringifyJson(nullObject([['b', 1], ['a', { d: null, c: 'x' }]]))).toBe('{"b":1,"a":{"d":null,"c":"x"}}');
  });

  it('puts integer-like keys first, as JS orders them', () => {
    const value = parseJson('{"b":1,"10":2,"a":3,"2":4}');
    expect(stringifyJson(value)).toBe('{"2":4,"10":2,"b":1,"a":3}');
  });

  it('writes __proto__ and escaped keys', () => {
    const value = parseJson('{"__proto__":{"x":1},"a\\"b":2,"\\u0000":3}');
    expect(stringifyJson(value)).toBe('{"__proto__":{"x":1},"a\\"b":2,"\\u0000":3}');
  });

  it('writes what JSON.stringify writes for any JSON.parse value read by parseJson', () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: 'binary' }), (value) => {
        const text = JSON.stringify(value);
        expect(stringifyJson(parseJson(text))).toBe(text);
      }),
      { numRuns: 500 },
    );
  });

  it('round-trips every value parseJson can produce', () => {
    fc.assert(
      fc.property(canonicalJson, (value) => {
        const text = stringifyJson(value);
        expect(parseJson(text)).toEqual(value);
        expect(stringifyJson(parseJson(text))).toBe(text);
      }),
      { numRuns: 1000 },
    );
  });

  it('round-trips unicode and escapes through text', () => {
    const text = '{"s":"\\u0000\\ud800\\udc00\\ud83d\\ude00é\\n\\"\\\\/","k\\u0000":[1.0,-0,18446744073709551615]}';
    const value = parseJson(text);
    const again = stringifyJson(value);
    expect(again).toBe('{"s":"\\u0000𐀀😀é\\n\\"\\\\/","k\\u0000":[1.0,-0,18446744073709551615]}');
    expect(parseJson(again)).toEqual(value);
  });

  it('leaves out object members that are undefined, as JSON.stringify does', () => {
    const value = { a: 1, optional: undefined, b: [{ c: undefined, d: 'x' }] } as unknown as JsonValue;
    expect(stringifyJson(value)).toBe(JSON.stringify(value));
    expect(stringifyJson({ only: undefined } as unknown as JsonValue)).toBe('{}');
  });

  it('writes what JSON cannot hold as JSON.stringify does: null, or left out', () => {
    expect(stringifyJson(Number.NaN)).toBe('null');
    expect(stringifyJson(Number.NEGATIVE_INFINITY)).toBe('null');
    expect(stringifyJson([undefined, () => 1, Symbol('s'), Number.POSITIVE_INFINITY])).toBe('[null,null,null,null]');
    expect(stringifyJson({ f: () => 1, s: Symbol('s'), u: undefined, n: Number.NaN })).toBe('{"n":null}');
    expect(stringifyJson(undefined)).toBeUndefined();
    expect(stringifyJson(() => 1)).toBeUndefined();
  });

  it('calls toJSON (with the member key) and unwraps boxed primitives, as JSON.stringify does', () => {
    const keys: string[] = [];
    const keyed = { toJSON: (key: string) => (keys.push(key), `at ${key}`) };
    const value = { at: new Date(Date.UTC(2024, 0, 2)), never: new Date(Number.NaN), list: [keyed], keyed, boxed: [Object(1), Object('s'), Object(false)] };
    expect(stringifyJson(value)).toBe('{"at":"2024-01-02T00:00:00.000Z","never":null,"list":["at 0"],"keyed":"at keyed","boxed":[1,"s",false]}');
    expect(keys).toEqual(['0', 'keyed']);
    expect(stringifyJson(value)).toBe(JSON.stringify(value));
    // A toJSON may give back what only stringifyJson writes exactly.
    expect(stringifyJson({ big: { toJSON: () => 2n ** 64n }, float: { toJSON: () => new JsonFloat('1.50') } })).toBe('{"big":18446744073709551616,"float":1.50}');
  });

  it('writes what JSON.stringify writes for any value it can write, -0 aside (property)', () => {
    const noNegativeZero = fc.double().filter((d) => !Object.is(d, -0));
    const withToJson = fc.jsonValue().map((inner) => ({ toJSON: () => inner }));
    const values = [fc.boolean(), fc.integer(), noNegativeZero, anyString, fc.constant(null), fc.constant(undefined), fc.date(), withToJson];
    fc.assert(
      fc.property(
        fc.anything({ values, withBoxedValues: true, withMap: true, withSet: true, withSparseArray: true, withNullPrototype: true, withTypedArray: true, withDate: true }),
        (value) => {
          // -0 still comes from a toJSON's value or a typed array: stringifyJson writes it as -0.
          let negativeZero = false;
          JSON.stringify(value, (_key, member: unknown) => ((negativeZero ||= Object.is(member, -0)), member));
          fc.pre(!negativeZero);
          expect(stringifyJson(value)).toBe(JSON.stringify(value));
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('refuses a JsonFloat whose text is not a JSON number with a fraction or an exponent', () => {
    for (const text of ['1', 'abc', 'NaN', 'Infinity', '.5', '1.', '01.5', '+1.0', '1.0 ', '1e', '0x1p3']) {
      expect(() => stringifyJson(new JsonFloat(text)), text).toThrow(TypeError);
    }
  });

  it(`refuses nesting deeper than ${MAX_JSON_DEPTH} and cycles`, () => {
    let deep: JsonValue = [];
    for (let i = 1; i < MAX_JSON_DEPTH; i++) deep = [deep];
    expect(stringifyJson(deep)).toBe('['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH));
    expect(() => stringifyJson([deep])).toThrow(new RangeError('nesting deeper than 512 levels in one event (or a cycle)'));

    const cycle: JsonObject = {};
    cycle.self = cycle;
    expect(() => stringifyJson(cycle)).toThrow(RangeError);
  });
});
