/**
 * Scans of JSON text that is known to be valid JSON: they look at strings only to step over them.
 *
 * @module
 */

/**
 * The JSON text without the white space between its tokens (the form os-audit stores an event
 * in): strings, numbers and key order stay exactly as written. Text without any white space
 * character is returned as it is, without a scan.
 *
 * @example
 * ```ts
 * compactJson('{"kind": "a b", "n": 1e2}'); // '{"kind":"a b","n":1e2}'
 * ```
 */
export function compactJson(text: string): string {
  if (!hasWhiteSpace(text)) return text;
  let out = '';
  let chunk = 0;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i = endOfString(text, i);
    } else if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
      out += text.slice(chunk, i);
      chunk = i + 1;
    }
  }
  return chunk === 0 ? text : out + text.slice(chunk);
}

/**
 * Compact JSON text laid out as `JSON.stringify(value, null, indent)` lays it out: one member
 * or item per line, `indent` spaces per level, `[]` and `{}` kept on one line. Strings, numbers
 * (a u64 above 2^53 too) and key order stay exactly as written.
 *
 * @example
 * ```ts
 * indentJson('{"a":[1,2],"b":{}}', 2); // '{\n  "a": [\n    1,\n    2\n  ],\n  "b": {}\n}'
 * ```
 */
export function indentJson(compact: string, indent: number): string {
  const unit = ' '.repeat(indent);
  let out = '';
  let depth = 0;
  const length = compact.length;
  for (let i = 0; i < length; i++) {
    const c = compact.charCodeAt(i);
    if (c === 0x22) {
      const end = endOfString(compact, i);
      out += compact.slice(i, end + 1);
      i = end;
    } else if (c === 0x7b || c === 0x5b) {
      const close = c === 0x7b ? 0x7d : 0x5d;
      if (compact.charCodeAt(i + 1) === close) {
        out += compact.slice(i, i + 2);
        i++;
      } else {
        depth++;
        out += `${compact[i]}\n${unit.repeat(depth)}`;
      }
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
      out += `\n${unit.repeat(depth)}${compact[i]}`;
    } else if (c === 0x2c) {
      out += `,\n${unit.repeat(depth)}`;
    } else if (c === 0x3a) {
      out += ': ';
    } else {
      out += compact[i];
    }
  }
  return out;
}

/**
 * Whether valid JSON text nests arrays and objects deeper than `maxDepth` (the outermost
 * container is level 1). Text too short to nest that deep is not scanned.
 *
 * @example
 * ```ts
 * nestsDeeperThan('[[1]]', 1); // true
 * nestsDeeperThan('{"a":"[[["}', 1); // false
 * ```
 */
export function nestsDeeperThan(text: string, maxDepth: number): boolean {
  if (text.length <= 2 * maxDepth) return false;
  let depth = 0;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i = endOfString(text, i);
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > maxDepth) return true;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return false;
}

function hasWhiteSpace(text: string): boolean {
  return text.includes(' ') || text.includes('\n') || text.includes('\r') || text.includes('\t');
}

/** The index of the closing quote of the string opened at `start`. */
function endOfString(text: string, start: number): number {
  let i = start + 1;
  for (;;) {
    const quote = text.indexOf('"', i);
    if (quote === -1) return text.length;
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return quote;
    i = quote + 1;
  }
}
