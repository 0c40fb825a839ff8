/**
 * A check of JSON text that builds no value: the fast path for the lines of a log, whose events
 * are mostly stored as written and not read. It never accepts a text that `parseJson` refuses.
 * On anything out of the ordinary it gives up: an error, an escaped or long key, an object of
 * many members, deep nesting, a top level that is no object. The caller then parses the text,
 * for its value or for its exact error.
 *
 * @module
 */

import { hexDigit } from './parse-json.js';

/** A member of a scanned object: its key and where its value stands in the text, `[start, end)`. */
export interface ScannedMember {
  key: string;
  start: number;
  end: number;
}

/** What {@link scanJsonObject} found. */
export interface JsonObjectScan {
  /** The members of the top-level object, in the text's order. */
  members: ScannedMember[];
  /**
   * When the top-level member `inner` is an object: where its members named in `innerKeys` stand,
   * index for index (`undefined` for one it lacks). Else null.
   */
  innerMembers: (ScannedMember | undefined)[] | null;
  /** Whether white space stands between the tokens of `inner`'s value (not inside its strings). */
  innerHasWhiteSpace: boolean;
}

/**
 * Checks that `text` is one JSON object as `parseJson` would, with every key written without an
 * escape. Says where its members stand, and those named `innerKeys` of its member `inner`. Gives
 * up (undefined) when only a parse of the text can tell what it is.
 *
 * @example
 * ```ts
 * const scan = scanJsonObject('{"seq":3,"event":{"kind":"x","turn":2}}', 'event', ['kind', 'turn']);
 * // scan.members: [{ key: 'seq', start: 7, end: 8 }, { key: 'event', start: 17, end: 38 }]
 * // scan.innerMembers: [{ key: 'kind', start: 25, end: 28 }, { key: 'turn', start: 36, end: 37 }]
 * scanJsonObject('{"a":1,"a":2}', 'event', []); // undefined: parseJson tells why
 * ```
 */
export function scanJsonObject(text: string, inner: string, innerKeys: readonly string[]): JsonObjectScan | undefined {
  const scanner = new Scanner(text, inner, innerKeys);
  return scanner.scanTopLevel() ? scanner.result : undefined;
}

/** Nesting the scan follows; deeper text is left to the parser (which takes up to 512 levels). */
const MAX_SCANNED_DEPTH = 64;
/** Members of one object told apart by comparing each key with the others; more are left to the parser. */
const MAX_SCANNED_KEYS = 64;
/** Characters of a key the scan compares; a longer key is left to the parser (whose hash lookup costs no more for it). */
const MAX_SCANNED_KEY_CHARS = 256;

/** `[start, end)` of the keys of the objects being scanned, innermost last; shared, as a scan never nests in another. */
const keySpans = new Int32Array(2 * MAX_SCANNED_KEYS * (MAX_SCANNED_DEPTH + 1));

const CONTROL_CHARACTER = /[\u0000-\u001f]/;

/** Which object is being scanned: the top-level one and `inner` record their members. */
const NESTED = 0;
const TOP_LEVEL = 1;
const INNER = 2;

class Scanner {
  pos = 0;
  readonly result: JsonObjectScan = { members: [], innerMembers: null, innerHasWhiteSpace: false };
  private readonly len: number;
  /** Times white space was stepped over between tokens. */
  private whiteSpaceRuns = 0;
  private keyTop = 0;
  /** The first backslash at or after where the last search started (2^32 - 1 when there is none). */
  private nextBackslash = -1;

  constructor(
    private readonly text: string,
    private readonly inner: string,
    private readonly innerKeys: readonly string[],
  ) {
    this.len = text.length;
  }

  scanTopLevel(): boolean {
    // Strings may hold none, and between tokens only tab, LF and CR are white space: text holding any is left to the parser.
    if (CONTROL_CHARACTER.test(this.text)) return false;
    this.skipWhiteSpace();
    if (this.text.charCodeAt(this.pos) !== 0x7b || !this.scanObject(1, TOP_LEVEL)) return false;
    this.skipWhiteSpace();
    return this.pos === this.len;
  }

  /** Steps over spaces: the only white space left, as text holding a tab, LF or CR was left to the parser. */
  private skipWhiteSpace(): void {
    const text = this.text;
    let pos = this.pos;
    if (text.charCodeAt(pos) !== 0x20) return;
    while (text.charCodeAt(++pos) === 0x20);
    this.pos = pos;
    this.whiteSpaceRuns++;
  }

  /** A value at `this.pos` (white space already stepped over). */
  private scanValue(depth: number, role: number): boolean {
    const c = this.text.charCodeAt(this.pos);
    if (c === 0x22) return this.scanString();
    if (c === 0x7b) return this.scanObject(depth + 1, role);
    if (c === 0x5b) return this.scanArray(depth + 1);
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return this.scanNumber();
    if (c === 0x74) return this.scanWord('true');
    if (c === 0x66) return this.scanWord('false');
    if (c === 0x6e) return this.scanWord('null');
    return false;
  }

  /** `this.pos` is at `{`. */
  private scanObject(depth: number, role: number): boolean {
    if (depth > MAX_SCANNED_DEPTH) return false;
    const text = this.text;
    const firstKey = this.keyTop;
    if (role === INNER) this.result.innerMembers = new Array<ScannedMember | undefined>(this.innerKeys.length).fill(undefined);
    if (this.isEmpty(0x7d)) return true;
    for (;;) {
      if (text.charCodeAt(this.pos) !== 0x22) return false;
      const keyStart = this.pos + 1;
      const keyEnd = this.plainStringEnd(keyStart);
      if (keyEnd < 0 || !this.addKey(firstKey, keyStart, keyEnd)) return false;
      this.pos = keyEnd + 1;
      this.skipWhiteSpace();
      if (text.charCodeAt(this.pos) !== 0x3a) return false;
      this.pos++;
      this.skipWhiteSpace();
      const start = this.pos;
      const runsBefore = this.whiteSpaceRuns;
      const isInner = role === TOP_LEVEL && this.isKey(keyStart, keyEnd, this.inner);
      if (!this.scanValue(depth, isInner ? INNER : NESTED)) return false;
      if (role === TOP_LEVEL) {
        this.result.members.push({ key: text.slice(keyStart, keyEnd), start, end: this.pos });
        if (isInner) this.result.innerHasWhiteSpace = this.whiteSpaceRuns !== runsBefore;
      } else if (role === INNER) {
        for (let index = 0; index < this.innerKeys.length; index++) {
          const key = this.innerKeys[index]!;
          if (this.isKey(keyStart, keyEnd, key)) this.result.innerMembers![index] = { key, start, end: this.pos };
        }
      }
      const more = this.nextItem(0x7d);
      if (more === undefined) return false;
      if (!more) {
        this.keyTop = firstKey;
        return true;
      }
    }
  }

  /** `this.pos` is at `[`. */
  private scanArray(depth: number): boolean {
    if (depth > MAX_SCANNED_DEPTH) return false;
    if (this.isEmpty(0x5d)) return true;
    for (;;) {
      if (!this.scanValue(depth, NESTED)) return false;
      const more = this.nextItem(0x5d);
      if (!more) return more === false;
    }
  }

  /** At a container's opening bracket: steps over it, and over its end when `close` follows (true). */
  private isEmpty(close: number): boolean {
    this.pos++;
    this.skipWhiteSpace();
    if (this.text.charCodeAt(this.pos) !== close) return false;
    this.pos++;
    return true;
  }

  /** After a member or an item: steps over the `,` before the next (true) or the container's `close` (false), else gives up (undefined). */
  private nextItem(close: number): boolean | undefined {
    this.skipWhiteSpace();
    const c = this.text.charCodeAt(this.pos);
    if (c !== 0x2c && c !== close) return undefined;
    this.pos++;
    if (c === close) return false;
    this.skipWhiteSpace();
    return true;
  }

  /** Records a key of the object whose keys start at `firstKey`; false when it repeats one, or there are too many or too long to compare. */
  private addKey(firstKey: number, start: number, end: number): boolean {
    const top = this.keyTop;
    const length = end - start;
    if (top - firstKey >= 2 * MAX_SCANNED_KEYS || length > MAX_SCANNED_KEY_CHARS) return false;
    for (let k = firstKey; k < top; k += 2) {
      if (keySpans[k + 1]! - keySpans[k]! === length && this.sameText(keySpans[k]!, start, length)) return false;
    }
    keySpans[top] = start;
    keySpans[top + 1] = end;
    this.keyTop = top + 2;
    return true;
  }

  private sameText(a: number, b: number, length: number): boolean {
    const text = this.text;
    for (let i = 0; i < length; i++) {
      if (text.charCodeAt(a + i) !== text.charCodeAt(b + i)) return false;
    }
    return true;
  }

  private isKey(start: number, end: number, key: string): boolean {
    return end - start === key.length && this.text.startsWith(key, start);
  }

  /** The index of the closing quote of a string opened before `start` that holds no escape, or -1 (control characters were ruled out beforehand). */
  private plainStringEnd(start: number): number {
    const text = this.text;
    const len = this.len;
    for (let i = start; i < len; i++) {
      const c = text.charCodeAt(i);
      if (c > 0x5c) continue;
      if (c === 0x22) return i;
      if (c === 0x5c) return -1;
    }
    return -1;
  }

  /**
   * `this.pos` is at the opening `"`. Native searches for the next quote and backslash (the
   * latter kept for the strings before it) rather than a look at each character: most strings
   * of an event are long prose without escapes. Control characters were ruled out beforehand.
   */
  private scanString(): boolean {
    const text = this.text;
    let i = this.pos + 1;
    for (;;) {
      const quote = text.indexOf('"', i);
      if (quote < 0) return false;
      if (this.nextBackslash < i) this.nextBackslash = text.indexOf('\\', i) >>> 0;
      const escape = this.nextBackslash;
      if (escape > quote) {
        this.pos = quote + 1;
        return true;
      }
      const e = text.charCodeAt(escape + 1);
      if (e === 0x75) {
        if ((hexDigit(text.charCodeAt(escape + 2)) | hexDigit(text.charCodeAt(escape + 3)) | hexDigit(text.charCodeAt(escape + 4)) | hexDigit(text.charCodeAt(escape + 5))) < 0) return false;
        i = escape + 6;
      } else if (e === 0x22 || e === 0x5c || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
        i = escape + 2;
      } else {
        return false;
      }
    }
  }

  /** `this.pos` is at `-` or a digit: RFC 8259's number (what may follow it, such as the `1` of `01`, is its container's to refuse). */
  private scanNumber(): boolean {
    const text = this.text;
    let i = this.pos;
    let c = text.charCodeAt(i);
    if (c === 0x2d) c = text.charCodeAt(++i);
    if (c === 0x30) {
      c = text.charCodeAt(++i);
    } else if (c >= 0x31 && c <= 0x39) {
      do c = text.charCodeAt(++i);
      while (c >= 0x30 && c <= 0x39);
    } else {
      return false;
    }
    if (c === 0x2e) {
      c = text.charCodeAt(++i);
      if (!(c >= 0x30 && c <= 0x39)) return false;
      do c = text.charCodeAt(++i);
      while (c >= 0x30 && c <= 0x39);
    }
    if (c === 0x65 || c === 0x45) {
      c = text.charCodeAt(++i);
      if (c === 0x2b || c === 0x2d) c = text.charCodeAt(++i);
      if (!(c >= 0x30 && c <= 0x39)) return false;
      do c = text.charCodeAt(++i);
      while (c >= 0x30 && c <= 0x39);
    }
    this.pos = i;
    return true;
  }

  private scanWord(word: string): boolean {
    if (!this.text.startsWith(word, this.pos)) return false;
    this.pos += word.length;
    return true;
  }
}
