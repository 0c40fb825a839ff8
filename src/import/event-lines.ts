import type { Readable } from 'node:stream';
import { type EventOrigin, InvalidEventError } from '../events/invalid-event-error.js';
import { EVENT_LIMIT_HINT, type Limits, maxEventBytesOf, maxLineBytes } from '../events/limits.js';
import { InvalidUtf8Error, LineTooLongError, type NumberedLine, readLines } from './read-lines.js';

/**
 * The lines of an input of events, a chunk at a time, at most {@link maxLineBytes} each. A line
 * that is not UTF-8 or is too long is an {@link InvalidEventError} naming the line and `where`
 * (the file, and the session when it is known). The rest of the input is then left unread.
 *
 * @example
 * ```ts
 * for await (const lines of readEventLines(fs.createReadStream('s1.jsonl'), { file: 's1.jsonl', sessionId: 's1' })) { … }
 * ```
 */
export async function* readEventLines(input: Readable, where: Pick<EventOrigin, 'file' | 'sessionId'>, limits: Limits = {}): AsyncGenerator<NumberedLine[]> {
  try {
    yield* readLines(input, { maxLineBytes: maxLineBytes(limits) });
  } catch (error) {
    if (error instanceof InvalidUtf8Error) {
      throw new InvalidEventError({ ...where, line: error.lineNumber }, 'not valid UTF-8 (nothing is stored with a replaced character)');
    }
    if (error instanceof LineTooLongError) {
      throw new InvalidEventError(
        { ...where, line: error.lineNumber },
        `the line is longer than ${error.maxBytes} bytes, more than an event of ${maxEventBytesOf(limits)} bytes with its envelope; the rest of the input is not read (${EVENT_LIMIT_HINT})`,
      );
    }
    throw error;
  }
}
