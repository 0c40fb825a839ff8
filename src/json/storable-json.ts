import type { JsonValue } from './json-value.js';
import { type StringSanitizer, stringifyJson, stringifyJsonWith } from './stringify-json.js';

/** `String.prototype.isWellFormed`: ES2024, present in every Node >= 20, missing from the ES2023 TS lib. */
const isWellFormed = (String.prototype as unknown as { isWellFormed: (this: string) => boolean }).isWellFormed;

/**
 * True when `s` holds a character PostgreSQL cannot store in `text` or `jsonb`: U+0000, or a
 * UTF-16 surrogate that is not part of a valid pair.
 *
 * @example
 * ```ts
 * hasUnstorableChar('plain');          // false
 * hasUnstorableChar('a\u0000b');       // true
 * hasUnstorableChar('\ud83d\ude00');   // false (a valid pair: 😀)
 * hasUnstorableChar('\ud83d');         // true
 * ```
 */
export function hasUnstorableChar(s: string): boolean {
  // Two native scans: about 10x faster than a regex test or a charCodeAt loop on plain text.
  if (s.indexOf('\u0000') !== -1) return true;
  return !isWellFormed.call(s);
}

/** A value ready for a `jsonb` column, with the exact text beside it when the two differ. */
export interface StorableJson {
  /**
   * Compact JSON that PostgreSQL's `jsonb` accepts: every U+0000 and every lone surrogate, in
   * string values and in object keys alike, replaced by U+FFFD.
   */
  payload: string;
  /**
   * `null` when `payload` is already exact; otherwise `stringifyJson(value)`, whose `\u0000`
   * and `\ud800` escapes are plain ASCII that a `text` column holds, so the original value is
   * `parseJson(exactText)`.
   */
  exactText: string | null;
}

/**
 * Encodes a value for PostgreSQL: `payload` for a `jsonb` column and, only when something had
 * to be replaced to make it storable, `exactText` to keep the original losslessly.
 *
 * In the common case (nothing to replace) the value is walked and stringified once.
 *
 * Replacing can make two keys of one object equal (`"a\u0000"` and `"a\ud800"` both become
 * `"a\ufffd"`). `payload` then holds a repeated key, which `jsonb` accepts by keeping the last
 * one; that is acceptable because `exactText` is set whenever anything was replaced and keeps
 * both keys.
 *
 * A number beyond what PostgreSQL's `numeric` holds (more than 131072 digits before the point
 * or 16383 after it, such as `1e131072` or `1e-20000`) is written into `payload` as a string
 * of its literal, and `exactText` keeps the number.
 *
 * `jsonb` normalizes exponent forms (`2e3` is stored as `2000`, `-0` as `0`): the value read
 * back is equal, though not always the same `JsonFloat` text; `exactText` is not set for that.
 *
 * @example
 * ```ts
 * toStorableJson({ a: 'ok' });
 * // { payload: '{"a":"ok"}', exactText: null }
 * toStorableJson({ a: 'x\u0000' });
 * // { payload: '{"a":"x\ufffd"}', exactText: '{"a":"x\\u0000"}' }
 * ```
 */
export function toStorableJson(value: JsonValue): StorableJson {
  const sanitizer = new StorableSanitizer();
  const payload = stringifyJsonWith(value, sanitizer);
  return { payload, exactText: sanitizer.replaced ? stringifyJson(value) : null };
}

/**
 * Escapes jsonb refuses (`\u0000`, a surrogate written as an escape: a lone one is refused, a
 * pair is not, but telling them apart is left to the careful path) and number literals that may
 * exceed `numeric` (a long run of digits, an exponent of four digits or more). Strings holding
 * such text make the check fail too: that only costs the careful path.
 */
const MAYBE_UNSTORABLE_ESCAPE = /\\u(?:0000|[dD][89a-fA-F])/;
const MAYBE_UNSTORABLE_NUMBER = /[0-9](?:[0-9]{63}|[eE][+-]?[0-9]{4})/;

/** Either pattern; the escapes are looked for only where a `\u` is (a native scan), which is rare. */
function maybeUnstorableText(text: string): boolean {
  return (text.includes('\\u') && MAYBE_UNSTORABLE_ESCAPE.test(text)) || MAYBE_UNSTORABLE_NUMBER.test(text);
}

/**
 * {@link toStorableJson} for a value whose JSON source text is at hand (and was parsed with
 * `parseJson`): the source itself when jsonb can hold it as is, saving a second serialization;
 * `undefined` when the careful path must decide.
 *
 * @example
 * ```ts
 * storableSourceText('{"a": 1}'); // { payload: '{"a": 1}', exactText: null }
 * storableSourceText('{"a": "\\u0000"}'); // undefined
 * ```
 */
export function storableSourceText(sourceText: string): StorableJson | undefined {
  return maybeUnstorableText(sourceText) ? undefined : { payload: sourceText, exactText: null };
}

class StorableSanitizer implements StringSanitizer {
  replaced = false;

  sanitize(text: string): string {
    if (!hasUnstorableChar(text)) return text;
    this.replaced = true;
    return replaceUnstorableChars(text);
  }

  sanitizeNumber(literal: string): string {
    if (fitsPostgresNumeric(literal)) return literal;
    this.replaced = true;
    return JSON.stringify(literal);
  }
}

/** PostgreSQL `numeric` limits: 131072 digits before the decimal point, 16383 after it. */
const NUMERIC_MAX_DIGITS_BEFORE_POINT = 131_072;
const NUMERIC_MAX_DIGITS_AFTER_POINT = 16_383;
const NUMBER_PARTS = /^-?([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/;

/** Whether `jsonb` accepts this JSON number literal; cheap for ordinary literals. */
export function fitsPostgresNumeric(literal: string): boolean {
  if (literal.length < 64 && !/[eE]/.test(literal)) return true;
  const parts = NUMBER_PARTS.exec(literal);
  if (parts === null) return false;
  const exponent = Number(parts[3] ?? '0');
  const digitsBefore = parts[1]!.length + exponent;
  const digitsAfter = (parts[2]?.length ?? 0) - exponent;
  return digitsBefore <= NUMERIC_MAX_DIGITS_BEFORE_POINT && digitsAfter <= NUMERIC_MAX_DIGITS_AFTER_POINT;
}

/** `s` with every U+0000 and every lone surrogate replaced by U+FFFD. */
function replaceUnstorableChars(s: string): string {
  const length = s.length;
  let out = '';
  let chunk = 0;
  for (let i = 0; i < length; i++) {
    const c = s.charCodeAt(i);
    if (c !== 0 && (c < 0xd800 || c > 0xdfff)) continue;
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
    }
    out += s.slice(chunk, i) + '\ufffd';
    chunk = i + 1;
  }
  return out + s.slice(chunk);
}
