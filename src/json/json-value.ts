/**
 * A JSON value as os-audit reads it: nothing is rounded and nothing is merged.
 *
 * - An integer literal is a `number` while it is a safe integer, a `bigint` beyond that
 *   (`18446744073709551615` stays exact).
 * - A literal with a fraction or an exponent (`1.0`, `2e3`) is a {@link JsonFloat}, so that a
 *   validator can tell `1.0` from `1`, as the runtime's Rust decoder does.
 * - Objects have a null prototype, so a key such as `__proto__` is an ordinary key.
 */
export type JsonValue = null | boolean | number | bigint | JsonFloat | string | JsonArray | JsonObject;

/** A JSON array as `parseJson` gives it. */
export type JsonArray = JsonValue[];

/**
 * A JSON object; `parseJson` gives it a null prototype and its keys in written order.
 *
 * @example
 * ```ts
 * const event: JsonObject = { kind: 'page_in', turn: 1, entry_count: 2 };
 * ```
 */
export interface JsonObject {
  [key: string]: JsonValue;
}

/**
 * A JSON number written with a fraction or an exponent, kept as its source text.
 *
 * @example
 * ```ts
 * const half = new JsonFloat('0.5');
 * half.value; // 0.5
 * ```
 */
export class JsonFloat {
  constructor(readonly text: string) {}

  get value(): number {
    return Number(this.text);
  }

  valueOf(): number {
    return this.value;
  }
}

/**
 * Whether a JSON value is an object (not an array, not a {@link JsonFloat}, not `null`).
 *
 * @example
 * ```ts
 * isJsonObject(parseJson('{"kind":"x"}')); // true
 * isJsonObject(parseJson('1.5')); // false: a JsonFloat
 * ```
 */
export function isJsonObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof JsonFloat);
}
