import { once } from 'node:events';
import { setImmediate } from 'node:timers/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { EncodedEvent } from '../../events/encode-event.js';
import type { EventRows } from './event-rows.js';

/** The columns an append writes, as `COPY` takes them. */
const COPY_EVENTS = 'COPY session_events (session_id, seq, kind, turn, payload, payload_text) FROM STDIN';

/** A value as a field of COPY's text format: backslash, tab and line breaks escaped. */
export function copyField(value: string): string {
  let text = value.includes('\\') ? value.replaceAll('\\', '\\\\') : value;
  // Three native searches: several times faster than one test of /[\t\n\r]/ on long text.
  if (text.includes('\t') || text.includes('\n') || text.includes('\r')) text = text.replaceAll('\t', '\\t').replaceAll('\n', '\\n').replaceAll('\r', '\\r');
  return text;
}

/**
 * Rows of COPY's text format written field by field straight into bytes. Each field is encoded
 * to UTF-8 on its own: joined first, one field holding a character above U+007F would make the
 * whole slice a two-byte string, several times slower to encode than its fields one by one.
 */
class CopyRows {
  private bytes: Buffer;
  private length = 0;

  constructor(expectedChars: number) {
    this.bytes = Buffer.allocUnsafe(Math.max(1024, expectedChars));
  }

  /** A field, or `\N` for null, then a tab or, with `endOfRow`, a line break. */
  field(value: string | null, endOfRow = false): void {
    if (value === null || value.includes('\t') || value.includes('\n') || value.includes('\r')) {
      this.escapedField(value === null ? '\\N' : copyField(value), endOfRow);
      return;
    }
    // Backslashes are doubled in the bytes: an escaped copy of a long payload would be one more string to make and encode.
    let backslashes = 0;
    for (let at = value.indexOf('\\'); at !== -1; at = value.indexOf('\\', at + 1)) backslashes++;
    this.escapedField(value, endOfRow);
    if (backslashes > 0) this.doubleBackslashes(backslashes);
  }

  /** A field already escaped with {@link copyField} (one written on many rows is escaped once). */
  escapedField(text: string, endOfRow = false): void {
    // A UTF-16 unit takes at most 3 bytes in UTF-8; the exact count is asked only near the end.
    if (this.length + text.length * 3 + 1 > this.bytes.length) this.reserve(Buffer.byteLength(text) + 1);
    this.length += this.bytes.write(text, this.length);
    this.bytes[this.length++] = endOfRow ? 0x0a : 0x09;
  }

  /** Doubles the last `count` backslashes written (those of the field just written, before its tab or line break), moving the bytes after them. */
  private doubleBackslashes(count: number): void {
    this.reserve(count);
    const bytes = this.bytes;
    // From the last backslash back (in UTF-8 the byte 0x5C is never part of another character): what follows the k-th one moves k bytes on.
    let tail = this.length;
    for (let at = bytes.lastIndexOf(0x5c, tail - 1), shift = count; shift > 0; at = bytes.lastIndexOf(0x5c, at - 1), shift--) {
      bytes.copyWithin(at + 1 + shift, at + 1, tail);
      bytes[at + shift - 1] = 0x5c;
      bytes[at + shift] = 0x5c;
      tail = at;
    }
    this.length += count;
  }

  /** The rows written. */
  take(): Buffer {
    return this.bytes.subarray(0, this.length);
  }

  private reserve(bytes: number): void {
    if (this.length + bytes <= this.bytes.length) return;
    const larger = Buffer.allocUnsafe(Math.max(2 * this.bytes.length, this.length + bytes));
    this.bytes.copy(larger, 0, 0, this.length);
    this.bytes = larger;
  }
}

/** One row of `session_events`; `sessionField` is the session id escaped with {@link copyField}. */
function writeEventRow(rows: CopyRows, sessionField: string, seq: number, kind: string, turn: number | null, payload: string, exactText: string | null): void {
  rows.escapedField(sessionField);
  rows.field(String(seq));
  rows.field(kind);
  rows.field(turn === null ? null : String(turn));
  rows.field(payload);
  rows.field(exactText, true);
}

/** About the bytes of `count` rows whose payloads hold `payloadChars` characters, to size them at once in most cases. */
function rowsChars(count: number, payloadChars: number): number {
  return Math.ceil(payloadChars * 1.25) + 80 * count;
}

/** Events of one session from `firstSeq` on, a slice at a time, as COPY text. */
export function* sessionEventsText(sessionId: string, firstSeq: number, slices: Iterable<readonly EncodedEvent[]>): Generator<Buffer> {
  const sessionField = copyField(sessionId);
  let seq = firstSeq;
  for (const slice of slices) {
    const rows = new CopyRows(rowsChars(slice.length, slice.reduce((chars, event) => chars + event.payload.length, 0)));
    for (const event of slice) writeEventRow(rows, sessionField, seq++, event.kind, event.turn, event.payload, event.payloadText);
    yield rows.take();
  }
}

/** Rows of any sessions, `sliceSize` at a time, as COPY text. */
export function* eventRowsText(rows: EventRows, sliceSize: number): Generator<Buffer> {
  for (let from = 0; from < rows.seqs.length; from += sliceSize) {
    const to = Math.min(rows.seqs.length, from + sliceSize);
    let payloadChars = 0;
    for (let i = from; i < to; i++) payloadChars += rows.payloads[i]!.length;
    const text = new CopyRows(rowsChars(to - from, payloadChars));
    for (let i = from; i < to; i++) {
      writeEventRow(text, copyField(rows.sessionIds[i]!), rows.seqs[i]!, rows.kinds[i]!, rows.turns[i]!, rows.payloads[i]!, rows.payloadTexts[i]!);
    }
    yield text.take();
  }
}

/**
 * Streams rows into `session_events` with `COPY` on `client` (inside the caller's
 * transaction), a slice of text at a time: the server stores a slice while the next is
 * encoded. `COPY` inserts rows in bulk, about twice as fast as `INSERT … SELECT` for large
 * appends. When making a slice throws, the `COPY` is cancelled and the error rethrown.
 */
export async function copyEvents(client: pg.PoolClient, slices: Iterable<Buffer>): Promise<void> {
  const stream = client.query(copyFrom(COPY_EVENTS));
  const finished = once(stream, 'finish');
  finished.catch(() => {});
  // A connection lost under the COPY fails its stream; writing, ending or destroying it then
  // would throw out of the driver, which has let go of the connection.
  let lost: Error | undefined;
  stream.on('error', (error) => (lost ??= error));
  const failIfLost = () => {
    if (lost !== undefined) throw lost;
  };
  try {
    for (const bytes of slices) {
      failIfLost();
      if (!stream.write(bytes)) await Promise.race([once(stream, 'drain'), finished]);
      // Let the driver take the server's answers and send this slice before the next is made.
      await setImmediate();
    }
    failIfLost();
  } catch (error) {
    if (lost === undefined) await new Promise<void>((resolve) => stream.destroy(error as Error).once('close', resolve));
    throw error;
  }
  stream.end();
  await finished;
}
