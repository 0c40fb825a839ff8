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

/** A line longer than the reader's limit: it stopped reading there, holding no more of it. */
export class LineTooLongError extends Error {
  constructor(
    readonly lineNumber: number,
    readonly maxBytes: number,
  ) {
    super(`line ${lineNumber} is longer than ${maxBytes} bytes`);
    this.name = 'LineTooLongError';
  }
}

/** How {@link readLines} reads. */
export interface ReadLinesOptions {
  /** Bytes a line may hold (its line break aside); the reader fails at the first longer line. Default: no limit. */
  maxLineBytes?: number;
}

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/**
 * Splits a byte stream into lines with bounded memory, whatever the stream's size: the lines
 * of one chunk at a time, and at most `maxLineBytes` of a line that spans chunks. They are
 * handed out a chunk's worth at a time: one await per chunk rather than per line. A long line
 * costs time in proportion to its length: its pieces are joined once, at its end. Blank lines
 * (JSON's white space only) are skipped but counted. A byte-order mark opening the input is
 * dropped; `\r\n` endings are accepted. A line that is not UTF-8 is an {@link InvalidUtf8Error}, a line longer than
 * `maxLineBytes` a {@link LineTooLongError}: the stream is then left unread.
 *
 * @example
 * ```ts
 * for await (const lines of readLines(fs.createReadStream('s1.jsonl'), { maxLineBytes: 2 ** 20 })) {
 *   for (const { lineNumber, text } of lines) { … }
 * }
 * ```
 */
export async function* readLines(input: Readable, options: ReadLinesOptions = {}): AsyncGenerator<NumberedLine[]> {
  const maxBytes = options.maxLineBytes ?? Number.POSITIVE_INFINITY;
  const firstLine = new TextDecoder('utf-8', { fatal: true });
  const laterLines = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  // The start of a line that spans chunks, in pieces joined once its end comes.
  let carry: Buffer[] = [];
  let carryBytes = 0;
  let lineNumber = 0;
  let bytesRead = 0;

  const checkLength = (bytes: number) => {
    // Not counting a `\r` ending it: that may come in the next chunk.
    if (bytes > maxBytes + 1) throw new LineTooLongError(lineNumber + 1, maxBytes);
  };
  const decode = (bytes: Buffer): string => {
    let end = bytes.length;
    if (end > 0 && bytes[end - 1] === CARRIAGE_RETURN) end -= 1;
    if (end > maxBytes) throw new LineTooLongError(lineNumber + 1, maxBytes);
    lineNumber += 1;
    try {
      return (lineNumber === 1 ? firstLine : laterLines).decode(bytes.subarray(0, end));
    } catch {
      throw new InvalidUtf8Error(lineNumber);
    }
  };
  const takeLine = (last: Buffer): Buffer => {
    if (carry.length === 0) return last;
    const line = Buffer.concat([...carry, last], carryBytes + last.length);
    carry = [];
    carryBytes = 0;
    return line;
  };

  for await (const chunk of input as AsyncIterable<Buffer | string>) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    const lines: NumberedLine[] = [];
    let start = 0;
    let newline = bytes.indexOf(NEWLINE, start);
    let failure: { error: unknown } | undefined;
    try {
      while (newline !== -1) {
        const piece = bytes.subarray(start, newline);
        checkLength(carryBytes + piece.length);
        bytesRead += piece.length + 1;
        const text = decode(takeLine(piece));
        if (!isBlank(text)) lines.push({ lineNumber, text, bytesRead });
        start = newline + 1;
        newline = bytes.indexOf(NEWLINE, start);
      }
    } catch (error) {
      failure = { error };
    }
    // The lines before a bad one, whatever the chunks: the caller may name what it read.
    if (lines.length > 0) yield lines;
    if (failure !== undefined) throw failure.error;
    if (start < bytes.length) {
      const rest = bytes.subarray(start);
      checkLength(carryBytes + rest.length);
      // A copy of a short rest: a slice would keep the whole chunk alive for a few bytes of it.
      carry.push(start === 0 ? bytes : Buffer.from(rest));
      carryBytes += rest.length;
      bytesRead += rest.length;
    }
  }
  if (carry.length > 0) {
    const text = decode(takeLine(Buffer.alloc(0)));
    if (!isBlank(text)) yield [{ lineNumber, text, bytesRead }];
  }
}

/** A line of JSON's white space only (space, tab, CR): other white space (U+00A0…) is no JSON, and no blank line either. */
function isBlank(text: string): boolean {
  return JSON_WHITE_SPACE_ONLY.test(text);
}

const JSON_WHITE_SPACE_ONLY = /^[ \t\r]*$/;
