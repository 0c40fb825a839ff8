import { JsonFloat, type JsonValue } from './json-value.js';
import { MAX_JSON_DEPTH, TOO_DEEP_MESSAGE } from './parse-json.js';

/**
 * Writes a value as compact JSON text, as `JSON.stringify` writes it, but losing nothing
 * `parseJson` keeps. A `bigint` is written as its digits (where `JSON.stringify` throws), a
 * {@link JsonFloat} as its `text`, the number `-0` as `-0` (not `0`).
 *
 * The rest follows `JSON.stringify`, so that an event given as a value is stored as the SDKs'
 * file log would write it:
 *
 * - Strings and keys are escaped alike (a lone surrogate becomes `\ud800`, U+0000 `\u0000`).
 * - Keys come in the object's own enumerable order: insertion order, except that JS puts
 *   integer-like keys (`"0"`, `"42"`) first in ascending order.
 * - An object's `toJSON` is called (a `Date` becomes its ISO string); boxed primitives are
 *   unwrapped.
 * - `NaN` and `±Infinity` are written `null`; `undefined`, functions and symbols are left out
 *   of objects and written `null` in arrays (given alone, the result is `undefined`).
 *
 * `parseJson(stringifyJson(v))` deep-equals `v` for every value `parseJson` can produce:
 * numbers that are safe integers (or `-0`), bigints beyond the safe range, and floats whose
 * text has a fraction or an exponent. Other numbers are written as `JSON.stringify` writes
 * them (so `0.5` comes back as a `JsonFloat` and `2 ** 60` as a `bigint`).
 *
 * Throws a `TypeError` for a `JsonFloat` whose text is not a JSON number with a fraction or an
 * exponent, and a `RangeError` for nesting deeper than `MAX_JSON_DEPTH` (which `parseJson`
 * would refuse; this also stops cycles).
 *
 * @example
 * ```ts
 * stringifyJson({ total_tokens: 18446744073709551615n, cost: new JsonFloat('1.0'), text: 'a\u0000' });
 * // '{"total_tokens":18446744073709551615,"cost":1.0,"text":"a\\u0000"}'
 * stringifyJson({ at: new Date(0), scores: [Number.NaN, undefined], skipped: undefined });
 * // '{"at":"1970-01-01T00:00:00.000Z","scores":[null,null]}'
 * ```
 */
export function stringifyJson(value: JsonValue): string;
export function stringifyJson(value: unknown): string | undefined;
export function stringifyJson(value: unknown): string | undefined {
  return write(value, '', 0);
}

/** Grammar of a JSON number that has a fraction or an exponent (or both). */
const FLOAT_TEXT = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][+-]?[0-9]+)?|[eE][+-]?[0-9]+)$/;

/** The text of `value`, the member `key` of its container; undefined where JSON.stringify leaves it out. */
function write(value: unknown, key: string, depth: number): string | undefined {
  if ((typeof value === 'object' && value !== null) || typeof value === 'function') {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') value = toJSON.call(value, key);
  }
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      if (value === 0) return Object.is(value, -0) ? '-0' : '0';
      return Number.isFinite(value) ? String(value) : 'null';
    case 'bigint':
      return value.toString();
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
      return value === null ? 'null' : writeObject(value, depth);
    default:
      // undefined, functions and symbols
      return undefined;
  }
}

function writeObject(value: object, depth: number): string | undefined {
  if (value instanceof JsonFloat) {
    const text = value.text;
    if (typeof text === 'string' && FLOAT_TEXT.test(text)) return text;
    throw new TypeError(`JsonFloat text ${JSON.stringify(text)} is not a JSON number with a fraction or an exponent`);
  }
  if (value instanceof Number || value instanceof String || value instanceof Boolean || value instanceof BigInt) {
    return write(value.valueOf(), '', depth);
  }
  if (depth >= MAX_JSON_DEPTH) {
    throw new RangeError(`${TOO_DEEP_MESSAGE} (or a cycle)`);
  }
  if (Array.isArray(value)) {
    const length = value.length;
    if (length === 0) return '[]';
    let out = '[' + (write(value[0], '0', depth + 1) ?? 'null');
    for (let i = 1; i < length; i++) out += ',' + (write(value[i], String(i), depth + 1) ?? 'null');
    return out + ']';
  }
  let out = '{';
  for (const key of Object.keys(value)) {
    const member = write((value as Record<string, unknown>)[key], key, depth + 1);
    if (member === undefined) continue;
    if (out.length > 1) out += ',';
    out += JSON.stringify(key);
    out += ':';
    out += member;
  }
  return out + '}';
}
