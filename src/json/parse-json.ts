import { JsonFloat, type JsonArray, type JsonObject, type JsonValue } from './json-value.js';

/**
 * The deepest nesting of arrays and objects in one event (the event object itself is level 1),
 * on every path into the store. {@link parseJson} accepts no deeper text. An event read out of
 * an envelope (`{"seq": N, "event": {…}}`) may go as deep as one given alone.
 */
export const MAX_JSON_DEPTH = 512;

/** How every path into the store words a refusal of {@link MAX_JSON_DEPTH}. */
export const TOO_DEEP_MESSAGE = `nesting deeper than ${MAX_JSON_DEPTH} levels in one event`;

/** Why {@link parseJson} refused a text: not JSON, a key repeated in one object, or nesting deeper than {@link MAX_JSON_DEPTH}. */
export type JsonParseErrorCode = 'syntax' | 'duplicate_key' | 'too_deep';

/**
 * Why {@link parseJson} refused a text, and where.
 *
 * `offset` is the 0-based UTF-16 index into the text of the offending character (the text's
 * length when the input ended too early). `line` and `column` are 1-based and count UTF-16
 * units, with LF, CR and CRLF each ending a line (for one-line input `column` is `offset + 1`).
 */
export class JsonParseError extends Error {
  override readonly name = 'JsonParseError';
  readonly code: JsonParseErrorCode;
  readonly offset: number;
  readonly line: number;
  readonly column: number;

  constructor(code: JsonParseErrorCode, message: string, offset: number, line: number, column: number) {
    super(message);
    this.code = code;
    this.offset = offset;
    this.line = line;
    this.column = column;
  }
}

/**
 * Parses one JSON text strictly (RFC 8259) and without loss.
 *
 * - An integer literal (no `.`, no exponent) is a `number` while `Number.isSafeInteger`,
 *   otherwise an exact `bigint`. `-0` is kept as the number `-0` (what `JSON.parse` gives).
 * - A literal with a fraction or an exponent is a {@link JsonFloat} holding its source text.
 * - Objects have a null prototype (`__proto__` is an ordinary key). A key repeated in one
 *   object, at any depth, is a `duplicate_key` error naming the key and the object's path.
 * - No comments, trailing commas, leading zeros, `NaN`/`Infinity`, single quotes, byte order
 *   mark or text after the value; white space is only space, tab, LF and CR; control
 *   characters inside strings must be escaped and every escape must be valid. Escaped lone
 *   surrogates (`"\ud800"`) are accepted and kept as they are in the JS string.
 * - More than {@link MAX_JSON_DEPTH} nested arrays/objects is a `too_deep` error.
 *
 * Every refusal is a {@link JsonParseError}; no input makes it overflow the stack.
 *
 * @example
 * ```ts
 * const event = parseJson('{"seq": 7, "total_tokens": 18446744073709551615, "cost": 1.0}');
 * // event.seq === 7, event.total_tokens === 18446744073709551615n,
 * // event.cost is a JsonFloat with text '1.0'
 *
 * parseJson('{"turn": 1, "turn": 2}');
 * // throws JsonParseError { code: 'duplicate_key',
 * //   message: 'duplicate key "turn" in object at $ (column 13)' }
 * ```
 */
export function parseJson(text: string): JsonValue {
  return parseWith(new Parser(text));
}

/**
 * {@link parseJson}, also giving back the source text of one member of the top-level object,
 * exactly as it was written (a caller that stores that member as JSON need not write it again).
 *
 * @example
 * ```ts
 * const { value, memberText } = parseJsonKeepingMember('{"seq": 1, "event": {"kind": "x"}}', 'event');
 * memberText; // '{"kind": "x"}'
 * ```
 */
export function parseJsonKeepingMember(text: string, key: string): { value: JsonValue; memberText: string | undefined } {
  // The member may nest as deep as a text given alone: one level more for its envelope.
  const parser = new Parser(text, key, MAX_JSON_DEPTH + 1);
  const value = parseWith(parser);
  const span = parser.keptSpan;
  return { value, memberText: span === null ? undefined : text.slice(span[0], span[1]) };
}

/**
 * {@link parseJson} of a JSON array, also giving back the source text of each item exactly as
 * it was written, and where it starts (a UTF-16 index into `text`); items may nest as deep as a
 * text given alone.
 *
 * @example
 * ```ts
 * parseJsonArrayKeepingItems('[{"kind": "a"}, 2]').items;
 * // [{ value: { kind: 'a' }, text: '{"kind": "a"}', offset: 1 }, { value: 2, text: '2', offset: 16 }]
 * ```
 */
export function parseJsonArrayKeepingItems(
  text: string,
): { items: { value: JsonValue; text: string; offset: number }[] } | { notAnArray: JsonValue } {
  const parser = new Parser(text, null, MAX_JSON_DEPTH + 1);
  parser.itemSpans = [];
  const value = parseWith(parser);
  if (!Array.isArray(value)) return { notAnArray: value };
  return {
    items: value.map((item, index) => {
      const [start, end] = parser.itemSpans![index]!;
      return { value: item, text: text.slice(start, end), offset: start };
    }),
  };
}

function parseWith(parser: Parser): JsonValue {
  const text = parser.text;
  try {
    const value = parser.parseValue(0);
    let pos = parser.pos;
    let c = text.charCodeAt(pos);
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = text.charCodeAt(++pos);
    if (pos < text.length) throw parser.unexpected(pos);
    return value;
  } catch (error) {
    if (error instanceof DuplicateKeyFault) throw duplicateKeyError(text, error);
    throw error;
  }
}

/** Thrown inside the parser on a repeated key; each enclosing container adds its segment. */
class DuplicateKeyFault {
  /** Path segments of the object holding the key, innermost first. */
  readonly path: (string | number)[] = [];

  constructor(
    readonly key: string,
    readonly offset: number,
  ) {}
}

/*
 * Character codes are written as literals in the hot paths:
 * ```text
 *   0x09 tab  0x0a LF  0x0d CR  0x20 space  0x22 "  0x2b +  0x2c ,  0x2d -  0x2e .  0x2f /
 *   0x30-0x39 0-9  0x3a :  0x45 E  0x5b [  0x5c \  0x5d ]  0x62 b  0x65 e  0x66 f  0x6e n
 *   0x72 r  0x74 t  0x75 u  0x7b {  0x7d }
 * ```
 */

/** Integer literals with at most this many digits are always safe integers. */
export const SAFE_DIGITS = 15;

class Parser {
  /** Index of the next character to read. */
  pos = 0;
  readonly len: number;

  /** Where the value of the top-level member {@link keptKey} stands in the text, once parsed. */
  keptSpan: [number, number] | null = null;
  /** When set, where each item of a top-level array stands in the text. */
  itemSpans: [number, number][] | null = null;

  constructor(
    readonly text: string,
    private readonly keptKey: string | null = null,
    private readonly maxDepth = MAX_JSON_DEPTH,
  ) {
    this.len = text.length;
  }

  /** Reads one value after optional white space; `depth` counts the enclosing containers. */
  parseValue(depth: number): JsonValue {
    const text = this.text;
    let pos = this.pos;
    let c = text.charCodeAt(pos);
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = text.charCodeAt(++pos);
    this.pos = pos;
    switch (c) {
      case 0x22:
        return this.parseString();
      case 0x7b:
        return this.parseObject(depth + 1);
      case 0x5b:
        return this.parseArray(depth + 1);
      case 0x2d:
      case 0x30:
      case 0x31:
      case 0x32:
      case 0x33:
      case 0x34:
      case 0x35:
      case 0x36:
      case 0x37:
      case 0x38:
      case 0x39:
        return this.parseNumber();
      case 0x74:
        this.expectWord('true');
        return true;
      case 0x66:
        this.expectWord('false');
        return false;
      case 0x6e:
        this.expectWord('null');
        return null;
      default:
        throw this.unexpected(pos);
    }
  }

  /** `this.pos` is at `{`. */
  private parseObject(depth: number): JsonObject {
    if (depth > this.maxDepth) throw this.tooDeep(this.pos);
    const text = this.text;
    const object: JsonObject = Object.create(null) as JsonObject;
    let pos = this.pos + 1;
    let c = text.charCodeAt(pos);
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = text.charCodeAt(++pos);
    if (c === 0x7d) {
      this.pos = pos + 1;
      return object;
    }
    let key = '';
    let inValue = false;
    try {
      for (;;) {
        if (c !== 0x22) throw this.unexpected(pos);
        this.pos = pos;
        key = this.parseString();
        if (object[key] !== undefined) throw new DuplicateKeyFault(key, pos);
        pos = this.pos;
        c = text.charCodeAt(pos);
        while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = text.charCodeAt(++pos);
        if (c !== 0x3a) throw this.unexpected(pos);
        this.pos = pos + 1;
        inValue = true;
        const value = this.parseValue(depth);
        inValue = false;
        if (depth === 1 && key === this.keptKey) this.keptSpan = [this.valueStart(pos + 1), this.pos];
        object[key] = value;
        pos = this.pos;
        c = text.charCodeAt(pos);
        while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = text.charCodeAt(++pos);
        if (c === 0x2c) {
          c = text.charCodeAt(++pos);
          while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = text.charCodeAt(++pos);
          continue;
        }
        if (c === 0x7d) {
          this.pos = pos + 1;
          return object;
        }
        throw this.unexpected(pos);
      }
    } catch (error) {
      if (inValue && error instanceof DuplicateKeyFault) error.path.push(key);
      throw error;
    }
  }

  /** `this.pos` is at `[`. */
  private parseArray(depth: number): JsonArray {
    if (depth > this.maxDepth) throw this.tooDeep(this.pos);
    const text = this.text;
    const array: JsonArray = [];
    let pos = this.pos + 1;
    let c = text.charCodeAt(pos);
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = text.charCodeAt(++pos);
    if (c === 0x5d) {
      this.pos = pos + 1;
      return array;
    }
    this.pos = pos;
    const spans = depth === 1 ? this.itemSpans : null;
    try {
      for (;;) {
        const start = spans === null ? 0 : this.valueStart(this.pos);
        array.push(this.parseValue(depth));
        spans?.push([start, this.pos]);
        pos = this.pos;
        c = text.charCodeAt(pos);
        while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = text.charCodeAt(++pos);
        if (c === 0x2c) {
          this.pos = pos + 1;
          continue;
        }
        if (c === 0x5d) {
          this.pos = pos + 1;
          return array;
        }
        throw this.unexpected(pos);
      }
    } catch (error) {
      // A fault from a child is thrown before that child is pushed, so its index is the length.
      if (error instanceof DuplicateKeyFault) error.path.push(array.length);
      throw error;
    }
  }

  /** `this.pos` is at the opening `"`; leaves `this.pos` after the closing one. */
  private parseString(): string {
    const text = this.text;
    const len = this.len;
    const start = this.pos + 1;
    for (let i = start; i < len; i++) {
      const c = text.charCodeAt(i);
      if (c > 0x5c) continue;
      if (c === 0x22) {
        this.pos = i + 1;
        return text.slice(start, i);
      }
      if (c === 0x5c) return this.parseEscapedString(start, i);
      if (c < 0x20) throw this.controlCharacter(i);
    }
    throw this.endOfInput();
  }

  /** The slow path of {@link parseString}, from the first backslash at `i`. */
  private parseEscapedString(start: number, i: number): string {
    const text = this.text;
    const len = this.len;
    let out = text.slice(start, i);
    let chunk = i;
    while (i < len) {
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        this.pos = i + 1;
        return out + text.slice(chunk, i);
      }
      if (c === 0x5c) {
        out += text.slice(chunk, i);
        const e = text.charCodeAt(i + 1);
        switch (e) {
          case 0x22:
            out += '"';
            break;
          case 0x5c:
            out += '\\';
            break;
          case 0x2f:
            out += '/';
            break;
          case 0x62:
            out += '\b';
            break;
          case 0x66:
            out += '\f';
            break;
          case 0x6e:
            out += '\n';
            break;
          case 0x72:
            out += '\r';
            break;
          case 0x74:
            out += '\t';
            break;
          case 0x75: {
            const unit =
              (hexDigit(text.charCodeAt(i + 2)) << 12) |
              (hexDigit(text.charCodeAt(i + 3)) << 8) |
              (hexDigit(text.charCodeAt(i + 4)) << 4) |
              hexDigit(text.charCodeAt(i + 5));
            if (unit < 0) {
              for (let k = i + 2; k < i + 6; k++) {
                if (k >= len) throw this.endOfInput();
                if (hexDigit(text.charCodeAt(k)) < 0) break;
              }
              throw this.syntax('invalid \\u escape', i);
            }
            out += String.fromCharCode(unit);
            i += 4;
            break;
          }
          default:
            if (i + 1 >= len) throw this.endOfInput();
            throw this.syntax(
              e > 0x20 && e < 0x7f ? `invalid escape '\\${String.fromCharCode(e)}'` : 'invalid escape',
              i,
            );
        }
        i += 2;
        chunk = i;
        continue;
      }
      if (c < 0x20) throw this.controlCharacter(i);
      i++;
    }
    throw this.endOfInput();
  }

  /** `this.pos` is at `-` or a digit. */
  private parseNumber(): number | bigint | JsonFloat {
    const text = this.text;
    const start = this.pos;
    let i = start;
    let c = text.charCodeAt(i);
    const negative = c === 0x2d;
    if (negative) c = text.charCodeAt(++i);
    const intStart = i;
    let value = 0;
    if (c === 0x30) {
      c = text.charCodeAt(++i);
      if (c >= 0x30 && c <= 0x39) throw this.syntax('leading zero in number', intStart);
    } else if (c >= 0x31 && c <= 0x39) {
      do {
        value = value * 10 + (c - 0x30);
        c = text.charCodeAt(++i);
      } while (c >= 0x30 && c <= 0x39);
    } else {
      throw this.unexpected(i);
    }
    const intEnd = i;
    let isFloat = false;
    if (c === 0x2e) {
      isFloat = true;
      c = text.charCodeAt(++i);
      if (!(c >= 0x30 && c <= 0x39)) throw this.unexpected(i);
      do c = text.charCodeAt(++i);
      while (c >= 0x30 && c <= 0x39);
    }
    if (c === 0x65 || c === 0x45) {
      isFloat = true;
      c = text.charCodeAt(++i);
      if (c === 0x2b || c === 0x2d) c = text.charCodeAt(++i);
      if (!(c >= 0x30 && c <= 0x39)) throw this.unexpected(i);
      do c = text.charCodeAt(++i);
      while (c >= 0x30 && c <= 0x39);
    }
    this.pos = i;
    if (isFloat) return new JsonFloat(text.slice(start, i));
    if (intEnd - intStart <= SAFE_DIGITS) return negative ? -value : value;
    // Number() rounds correctly, so a literal rounds to a safe integer only when it is one.
    const literal = text.slice(start, i);
    const rounded = Number(literal);
    return Number.isSafeInteger(rounded) ? rounded : BigInt(literal);
  }

  private expectWord(word: string): void {
    const pos = this.pos;
    if (this.text.startsWith(word, pos)) {
      this.pos = pos + word.length;
      return;
    }
    let i = 1;
    while (this.text.charCodeAt(pos + i) === word.charCodeAt(i)) i++;
    throw this.unexpected(pos + i);
  }

  /** The first character of a value after `from` (white space skipped). */
  private valueStart(from: number): number {
    let c = this.text.charCodeAt(from);
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = this.text.charCodeAt(++from);
    return from;
  }

  unexpected(offset: number): JsonParseError {
    if (offset >= this.len) return this.endOfInput();
    return this.syntax(`unexpected character ${describeCharAt(this.text, offset)}`, offset);
  }

  private endOfInput(): JsonParseError {
    const { line, column } = lineAndColumn(this.text, this.len);
    return new JsonParseError('syntax', 'unexpected end of input', this.len, line, column);
  }

  private controlCharacter(offset: number): JsonParseError {
    return this.syntax(`unescaped control character ${unicodeName(this.text.charCodeAt(offset))} in string`, offset);
  }

  private tooDeep(offset: number): JsonParseError {
    const { line, column } = lineAndColumn(this.text, offset);
    return new JsonParseError(
      'too_deep',
      `${TOO_DEEP_MESSAGE} at ${where(line, column)}`,
      offset,
      line,
      column,
    );
  }

  private syntax(what: string, offset: number): JsonParseError {
    const { line, column } = lineAndColumn(this.text, offset);
    return new JsonParseError('syntax', `${what} at ${where(line, column)}`, offset, line, column);
  }
}

/** The value of a hex digit, or a large negative number so that an OR of four stays negative. */
export function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -0x10000;
}

function duplicateKeyError(text: string, fault: DuplicateKeyFault): JsonParseError {
  const { line, column } = lineAndColumn(text, fault.offset);
  const path = formatPath(fault.path.reverse());
  const message = `duplicate key ${quoteForMessage(fault.key)} in object at ${path} (${where(line, column)})`;
  return new JsonParseError('duplicate_key', message, fault.offset, line, column);
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** `$`, `$.a.b`, `$.calls[2]`, `$["a b"]`. */
function formatPath(segments: readonly (string | number)[]): string {
  let path = '$';
  for (const segment of segments) {
    if (typeof segment === 'number') path += `[${segment}]`;
    else if (IDENTIFIER.test(segment)) path += `.${segment}`;
    else path += `[${JSON.stringify(segment)}]`;
  }
  return path;
}

function quoteForMessage(key: string): string {
  const quoted = JSON.stringify(key);
  return quoted.length <= 80 ? quoted : `${quoted.slice(0, 77)}…"`;
}

function where(line: number, column: number): string {
  return line === 1 ? `column ${column}` : `line ${line}, column ${column}`;
}

/** Only called on errors, so a scan of the text is fine. */
function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x0a || (c === 0x0d && text.charCodeAt(i + 1) !== 0x0a)) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

function describeCharAt(text: string, offset: number): string {
  const c = text.charCodeAt(offset);
  if (c === 0x27) return `"'"`;
  if (c > 0x20 && c < 0x7f) return `'${String.fromCharCode(c)}'`;
  return unicodeName(text.codePointAt(offset) ?? c);
}

function unicodeName(codePoint: number): string {
  return `U+${codePoint.toString(16).toUpperCase().padStart(4, '0')}`;
}
