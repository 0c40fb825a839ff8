import { JsonFloat } from './json-value.js';

/** How many characters of a string a message shows. */
const MAX_QUOTED = 60;

/**
 * What a value is, in words, for an error message that says what it found: an integer as its
 * digits, anything else named with its type.
 *
 * @example
 * ```ts
 * describeJsonValue(-1);                    // '-1'
 * describeJsonValue(new JsonFloat('1.5'));  // 'the float 1.5'
 * describeJsonValue('12');                  // 'the string "12"'
 * describeJsonValue([1, 2]);                // 'an array of 2 items'
 * describeJsonValue(undefined);             // 'nothing'
 * ```
 */
export function describeJsonValue(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'undefined':
      return 'nothing';
    case 'boolean':
      return `the boolean ${value}`;
    case 'bigint':
      return String(value);
    case 'number':
      if (Object.is(value, -0)) return '-0 (a negative zero, which the runtime reads as a float)';
      if (Number.isSafeInteger(value)) return String(value);
      return `the number ${value}`;
    case 'string':
      return `the string ${quoteString(value)}`;
    case 'function':
    case 'symbol':
      return `a ${typeof value}`;
  }
  if (value instanceof JsonFloat) return `the float ${value.text}`;
  if (Array.isArray(value)) {
    return value.length === 0 ? 'an empty array' : `an array of ${value.length} item${value.length === 1 ? '' : 's'}`;
  }
  return 'an object';
}

/**
 * A string as JSON text (U+0000 and lone surrogates escaped), cut after 60 characters.
 *
 * @example
 * ```ts
 * quoteString('ask_user'); // '"ask_user"'
 * ```
 */
export function quoteString(s: string): string {
  return s.length <= MAX_QUOTED ? JSON.stringify(s) : `${JSON.stringify(s.slice(0, MAX_QUOTED))}…`;
}
