import { Readable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidUtf8Error, LineTooLongError, type NumberedLine, readLines } from '../../src/import/read-lines.js';

/** What `readLines` hands out before it stops, and why it stopped. */
interface Outcome {
  lines: NumberedLine[];
  error?: { name: string; lineNumber: number };
}

async function read(chunks: readonly Buffer[], maxLineBytes?: number): Promise<Outcome> {
  const outcome: Outcome = { lines: [] };
  try {
    for await (const lines of readLines(Readable.from(chunks), { maxLineBytes })) {
      outcome.lines.push(...lines);
    }
  } catch (error) {
    if (!(error instanceof InvalidUtf8Error || error instanceof LineTooLongError)) throw error;
    outcome.error = { name: error.name, lineNumber: error.lineNumber };
  }
  return outcome;
}

/** The same, the whole input at once, line by line: the model `readLines` must agree with. */
function model(input: Buffer, maxLineBytes = Number.POSITIVE_INFINITY): Outcome {
  const outcome: Outcome = { lines: [] };
  const pieces: { piece: Buffer; bytesRead: number }[] = [];
  for (let start = 0; start < input.length; ) {
    const newline = input.indexOf(0x0a, start);
    pieces.push({ piece: input.subarray(start, newline === -1 ? input.length : newline), bytesRead: newline === -1 ? input.length : newline + 1 });
    start = newline === -1 ? input.length : newline + 1;
  }
  for (const [index, { piece, bytesRead }] of pieces.entries()) {
    const lineNumber = index + 1;
    const bytes = piece.at(-1) === 0x0d ? piece.subarray(0, -1) : piece;
    if (bytes.length > maxLineBytes) return { ...outcome, error: { name: 'LineTooLongError', lineNumber } };
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: index > 0 }).decode(bytes);
    } catch {
      return { ...outcome, error: { name: 'InvalidUtf8Error', lineNumber } };
    }
    if (!/^[ \t\r]*$/.test(text)) outcome.lines.push({ lineNumber, text, bytesRead });
  }
  return outcome;
}

/** Cuts `input` at the given points: a stream's chunks fall anywhere, inside a line or a character. */
function chunked(input: Buffer, cuts: readonly number[]): Buffer[] {
  const points = [...new Set(cuts.map((cut) => cut % (input.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let start = 0;
  for (const point of [...points, input.length]) {
    if (point > start) chunks.push(input.subarray(start, point));
    start = Math.max(start, point);
  }
  return chunks;
}

/** Bytes that often make lines: newlines, `\r`, white space, a BOM's and multi-byte characters' bytes, anything. */
const lineBytes = fc.array(
  fc.oneof(
    fc.constantFrom(0x0a, 0x0d, 0x20, 0x7b, 0x22, 0xef, 0xbb, 0xbf, 0xc3, 0xa9, 0xf0, 0x9f),
    fc.integer({ min: 0, max: 255 }),
  ),
  { maxLength: 300 },
);

describe('readLines on arbitrary bytes', () => {
  it('agrees with reading the whole input at once, however it is chunked, with and without a line limit', async () => {
    await fc.assert(
      fc.asyncProperty(lineBytes, fc.array(fc.nat(), { maxLength: 20 }), fc.option(fc.integer({ min: 0, max: 40 })), async (bytes, cuts, max) => {
        const input = Buffer.from(bytes);
        expect(await read(chunked(input, cuts), max ?? undefined)).toEqual(model(input, max ?? undefined));
      }),
      { numRuns: 500 },
    );
  });

  it('reads truncated and valid text lines alike: only a line over the limit stops it, at that line', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.string({ unit: 'grapheme', maxLength: 30 }), { maxLength: 20 }), fc.nat(), async (texts, cut) => {
        const input = Buffer.from(texts.map((text) => text.replace(/[\r\n]/g, '')).join('\n'));
        const truncated = input.subarray(0, cut % (input.length + 1));
        expect(await read(chunked(truncated, [cut >> 3, cut >> 1]), 20)).toEqual(model(truncated, 20));
      }),
    );
  });
});

describe('readLines on text', () => {
  it('agrees with reading the whole input at once on text lines of any ending, blank or not, however it is chunked', async () => {
    const text = fc.string({ unit: fc.constantFrom('a', '{"k":1}', 'é', '\u{1f600}', ' ', '\t', '\r', '\ufeff'), maxLength: 12 });
    const ending = fc.constantFrom('\n', '\r\n', '\r\r\n');
    const input = fc.tuple(fc.array(fc.tuple(text, ending), { maxLength: 30 }), text).map(([lines, last]) => Buffer.from(lines.map(([line, end]) => line + end).join('') + last));
    await fc.assert(
      fc.asyncProperty(input, fc.array(fc.nat(), { maxLength: 6 }), fc.option(fc.integer({ min: 0, max: 30 })), async (bytes, cuts, max) => {
        expect(await read(chunked(bytes, cuts), max ?? undefined)).toEqual(model(bytes, max ?? undefined));
      }),
      { numRuns: 1000 },
    );
  });
});

describe('readLines on long lines', () => {
  /** A stream of `count` chunks of `size` bytes with no newline, counting what was taken of it. */
  function endlessLine(size: number, count = Number.POSITIVE_INFINITY) {
    const chunk = Buffer.alloc(size, 0x61);
    const taken = { bytes: 0 };
    const stream = Readable.from(
      (function* () {
        for (let i = 0; i < count; i++) {
          taken.bytes += size;
          yield chunk;
        }
      })(),
    );
    return { stream, taken };
  }

  it('stops at the limit of a line without end, having taken no more than the limit and a chunk of the stream', async () => {
    const { stream, taken } = endlessLine(64 * 1024);
    const error = await (async () => {
      for await (const _ of readLines(stream, { maxLineBytes: 2 ** 20 })) throw new Error('no line expected');
    })().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LineTooLongError);
    expect(error).toMatchObject({ lineNumber: 1, maxBytes: 2 ** 20, message: 'line 1 is longer than 1048576 bytes' });
    // Readable.from reads ahead by its high-water mark (16 objects).
    expect(taken.bytes).toBeLessThanOrEqual(2 ** 20 + 18 * 64 * 1024);
    expect(stream.destroyed).toBe(true);
  });

  it('takes a line of exactly the limit, and its \\r\\n ending', async () => {
    const line = 'é'.repeat(50);
    expect(await read([Buffer.from(`${line}\r\n${line}\r`)], 100)).toEqual({ lines: [{ lineNumber: 1, text: line, bytesRead: 102 }, { lineNumber: 2, text: line, bytesRead: 203 }] });
    expect(await read([Buffer.from(`${line}a\r\n`)], 100)).toEqual({ lines: [], error: { name: 'LineTooLongError', lineNumber: 1 } });
  });

  it('reads a 40 MB line in 64 KiB chunks in about the time of four 10 MB ones (the pieces are joined once)', async () => {
    const timeOf = async (megabytes: number) => {
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      const chunks = function* () {
        for (let i = 0; i < (megabytes * 2 ** 20) / chunk.length; i++) yield chunk;
        yield Buffer.from('\n');
      };
      const started = performance.now();
      const read = [];
      for await (const lines of readLines(Readable.from(chunks()))) read.push(...lines);
      expect(read.map((line) => line.text.length)).toEqual([megabytes * 2 ** 20]);
      return performance.now() - started;
    };
    await timeOf(10); // warm up
    const [ten, forty] = [await timeOf(10), await timeOf(40)];
    console.log(`readLines: a 10 MB line in ${ten.toFixed(0)} ms, a 40 MB line in ${forty.toFixed(0)} ms`);
    // Linear: about 4x. Joining at each chunk, as before, took 16x (and seconds for 40 MB); the margin is for a busy machine.
    expect(forty).toBeLessThan(10 * ten + 500);
  });
});
