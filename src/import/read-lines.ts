import type { Readable } from 'node:stream';

/** One line of a text input, numbered from 1, without its line break. */
export interface NumberedLine {
  lineNumber: number;
  text: string;
  /** Bytes of input consumed up to the end of this line. */
  bytesRead: number;
}

/** A line that is not valid UTF-8: decoding it would silently change it. */
export class InvalidUtf8Error extends Error {
  constructor(readonly lineNumber: number) {
    super(`line ${lineNumber} is not valid UTF-8`);
    this.name = 'InvalidUtf8Error';
  }
}

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/**
 * Splits a byte stream into lines with bounded memory (the lines of one chunk of the stream at
 * a time, whatever the stream's size), handed out a chunk's worth at a time: one await per
 * chunk rather than per line. Blank lines are skipped but counted; a byte-order mark opening
 * the input is dropped; `\r\n` endings are accepted.
 *
 * @example
 * ```ts
 * for await (const lines of readLines(fs.createReadStream('s1.jsonl'))) {
 *   for (const { lineNumber, text } of lines) { … }
 * }
 * ```
 */
export async function* readLines(input: Readable): AsyncGenerator<NumberedLine[]> {
  const firstLine = new TextDecoder('utf-8', { fatal: true });
  const laterLines = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  let carry: Buffer | undefined;
  let lineNumber = 0;
  let bytesRead = 0;

  const decode = (bytes: Buffer): string => {
    lineNumber += 1;
    let end = bytes.length;
    if (end > 0 && bytes[end - 1] === CARRIAGE_RETURN) end -= 1;
    try {
      return (lineNumber === 1 ? firstLine : laterLines).decode(bytes.subarray(0, end));
    } catch {
      throw new InvalidUtf8Error(lineNumber);
    }
  };

  for await (const chunk of input as AsyncIterable<Buffer | string>) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    const lines: NumberedLine[] = [];
    let start = 0;
    let newline = bytes.indexOf(NEWLINE, start);
    while (newline !== -1) {
      const piece = bytes.subarray(start, newline);
      const line = carry === undefined ? piece : Buffer.concat([carry, piece]);
      carry = undefined;
      bytesRead += piece.length + 1;
      const text = decode(line);
      if (!isBlank(text)) lines.push({ lineNumber, text, bytesRead });
      start = newline + 1;
      newline = bytes.indexOf(NEWLINE, start);
    }
    if (lines.length > 0) yield lines;
    if (start < bytes.length) {
      const rest = bytes.subarray(start);
      carry = carry === undefined ? Buffer.from(rest) : Buffer.concat([carry, rest]);
      bytesRead += rest.length;
    }
  }
  if (carry !== undefined) {
    const text = decode(carry);
    if (!isBlank(text)) yield [{ lineNumber, text, bytesRead }];
  }
}

function isBlank(text: string): boolean {
  return text.length === 0 || (text.charCodeAt(0) <= 0x20 && text.trim() === '');
}
