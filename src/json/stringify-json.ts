import { JsonFloat, type JsonValue } from './json-value.js';
import { MAX_JSON_DEPTH, TOO_DEEP_MESSAGE } from './parse-json.js';

/**
 * Writes a {@link JsonValue} as compact JSON text, losing nothing that `parseJson` keeps.
 *
 * - Strings and keys are escaped exactly as `JSON.stringify` escapes them (a lone surrogate
 *   becomes `\ud800`, U+0000 becomes `\u0000`).
 * - A `bigint` is written as its digits, a {@link JsonFloat} as its `text`, the number `-0`
 *   as `-0`.
 * - Keys come in the object's own property order: insertion order, except that JS puts
 *   integer-like keys (`"0"`, `"42"`) first in ascending order.
 *
 * `parseJson(stringifyJson(v))` deep-equals `v` for every value `parseJson` can produce:
 * numbers that are safe integers (or `-0`), bigints beyond the safe range, and floats whose
 * text has a fraction or an exponent. Other numbers are written as `JSON.stringify` writes
 * them (so `0.5` comes back as a `JsonFloat` and `2 ** 60` as a `bigint`).
 *
 * An object member whose value is `undefined` is left out, as `JSON.stringify` leaves it out.
 * Throws a `TypeError` for what JSON cannot hold (`NaN`, `Infinity`, `undefined` elsewhere, functions,
 * symbols, a `JsonFloat` whose text is not a JSON number with a fraction or an exponent) and
 * a `RangeError` for nesting deeper than `MAX_JSON_DEPTH` (which `parseJson` would refuse;
 * this also stops cycles).
 *
 * @example
 * ```ts
 * stringifyJson({ total_tokens: 18446744073709551615n, cost: new JsonFloat('1.0'), text: 'a\u0000' });
 * // '{"total_tokens":18446744073709551615,"cost":1.0,"text":"a\\u0000"}'
 * ```
 */
export function stringifyJson(value: JsonValue): string {
  return write(value, 0);
}

/** Grammar of a JSON number that has a fraction or an exponent (or both). */
const FLOAT_TEXT = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][+-]?[0-9]+)?|[eE][+-]?[0-9]+)$/;

function write(value: JsonValue, depth: number): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      if (value === 0) return Object.is(value, -0) ? '-0' : '0';
      if (Number.isFinite(value)) return String(value);
      throw new TypeError(`${value} cannot be written as JSON`);
    case 'bigint':
      return value.toString();
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (value === null) return 'null';
      if (value instanceof JsonFloat) {
        const text = value.text;
        if (typeof text === 'string' && FLOAT_TEXT.test(text)) return text;
        throw new TypeError(`JsonFloat text ${JSON.stringify(text)} is not a JSON number with a fraction or an exponent`);
      }
      if (depth >= MAX_JSON_DEPTH) {
        throw new RangeError(`${TOO_DEEP_MESSAGE} (or a cycle)`);
      }
      if (Array.isArray(value)) {
        const length = value.length;
        if (length === 0) return '[]';
        let out = '[' + write(value[0] as JsonValue, depth + 1);
        for (let i = 1; i < length; i++) out += ',' + write(value[i] as JsonValue, depth + 1);
        return out + ']';
      }
      let out = '{';
      for (const key of Object.keys(value)) {
        const member = value[key];
        // As JSON.stringify does: SDK objects leave optional fields undefined to mean absent.
        if (member === undefined) continue;
        if (out.length > 1) out += ',';
        out += JSON.stringify(key);
        out += ':';
        out += write(member, depth + 1);
      }
      return out + '}';
    }
    default:
      throw new TypeError(`a value of type ${typeof value} cannot be written as JSON`);
  }
}
