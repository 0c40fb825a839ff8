import { once } from 'node:events';
import { setImmediate } from 'node:timers/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { EncodedEvent } from '../encode-event.js';

/** The columns an append writes, as `COPY` takes them. */
const COPY_EVENTS = 'COPY session_events (session_id, seq, kind, turn, payload, payload_text, validated) FROM STDIN';

/** A value as a field of COPY's text format: backslash, tab and line breaks escaped. */
export function copyField(value: string): string {
  let text = value.includes('\\') ? value.replaceAll('\\', '\\\\') : value;
  if (/[\t\n\r]/.test(text)) text = text.replaceAll('\t', '\\t').replaceAll('\n', '\\n').replaceAll('\r', '\\r');
  return text;
}

/** Events of one session from `firstSeq` on, as lines of COPY's text format. */
function eventLines(sessionId: string, firstSeq: number, events: readonly EncodedEvent[]): string {
  const session = copyField(sessionId);
  let text = '';
  events.forEach((event, index) => {
    const turn = event.turn === null ? '\\N' : String(event.turn);
    const exact = event.payloadText === null ? '\\N' : copyField(event.payloadText);
    text += `${session}\t${firstSeq + index}\t${copyField(event.kind)}\t${turn}\t${copyField(event.payload)}\t${exact}\tt\n`;
  });
  return text;
}

/**
 * Streams one session's events into `session_events` with `COPY` on `client` (inside the
 * caller's transaction), a slice at a time: the server stores a slice while the next is
 * encoded. `COPY` inserts rows in bulk, about twice as fast as `INSERT … SELECT` for large
 * appends. When `encode` throws, the `COPY` is cancelled and the error rethrown.
 */
export async function copyEvents(
  client: pg.PoolClient,
  sessionId: string,
  firstSeq: number,
  slices: Iterable<readonly EncodedEvent[]>,
): Promise<void> {
  const stream = client.query(copyFrom(COPY_EVENTS));
  const finished = once(stream, 'finish');
  finished.catch(() => {});
  let seq = firstSeq;
  try {
    for (const slice of slices) {
      if (!stream.write(eventLines(sessionId, seq, slice))) await once(stream, 'drain');
      seq += slice.length;
      // Let the driver take the server's answers and send this slice before the next is encoded.
      await setImmediate();
    }
  } catch (error) {
    await new Promise<void>((resolve) => stream.destroy(error as Error).once('close', resolve));
    throw error;
  }
  stream.end();
  await finished;
}
