import { type Kysely, sql } from 'kysely';
import { exactInteger } from '../db/exact-integer.js';
import type { DB } from '../db/schema.js';
import { readStoredEvent } from './read-stored-event.js';
import type { ReadSessionTextOptions, StoredEvent, StoredEventText } from './stored-event.js';

/** How a page is fetched: by default once; the store passes its retry on a lost connection. */
export interface ReadRetry {
  retry?: <T>(work: () => Promise<T>) => Promise<T>;
}

/**
 * A session's stored events in seq order, a page at a time, each as its exact JSON text. The
 * one reader of a log: the store, the projector's verify and the console all read through it.
 *
 * @example
 * ```ts
 * for await (const { seq, text } of readSessionText(db, 'session-1', { fromSeq: 10 })) console.log(seq, text);
 * ```
 */
export async function* readSessionText(db: Kysely<DB>, sessionId: string, options: ReadSessionTextOptions & ReadRetry = {}): AsyncGenerator<StoredEventText> {
  const pageSize = options.pageSize ?? 1000;
  const retry = options.retry ?? ((work) => work());
  let nextSeq = options.fromSeq ?? 0;
  for (;;) {
    let query = db
      .selectFrom('session_events')
      .select(['seq', 'position', 'kind', 'recorded_at'])
      .select(exactTextSql().as('text'))
      .where('session_id', '=', sessionId)
      .where('seq', '>=', nextSeq);
    if (options.kinds !== undefined) query = query.where('kind', '=', sql<string>`ANY(${[...options.kinds]}::text[])`);
    if (options.notKinds !== undefined) query = query.where('kind', '<>', sql<string>`ALL(${[...options.notKinds]}::text[])`);
    const pageQuery = query.orderBy('seq').limit(pageSize);
    const page = await retry(() => pageQuery.execute());
    for (const row of page) {
      const seq = exactInteger(row.seq);
      yield { sessionId, seq, position: exactInteger(row.position), kind: row.kind, recordedAt: row.recorded_at, text: row.text };
      nextSeq = seq + 1;
    }
    if (page.length < pageSize) return;
  }
}

/** {@link readSessionText} with each event read (`readStoredEvent`): a corrupt one throws `CorruptEventError`. */
export async function* readSession(db: Kysely<DB>, sessionId: string, options: ReadSessionTextOptions & ReadRetry = {}): AsyncGenerator<StoredEvent> {
  for await (const stored of readSessionText(db, sessionId, options)) yield { ...stored, event: readStoredEvent(stored) };
}

/** A stored event's exact JSON text: `payload_text` where `payload` is a readable stand-in, else `payload`. */
function exactTextSql() {
  return sql<string>`coalesce(payload_text, payload::text)`;
}

/** What reads a session's stored events: an `EventStore`, or {@link storedLogReader} of a database. */
export interface StoredLogReader {
  readSessionText(sessionId: string, options?: ReadSessionTextOptions): AsyncIterable<StoredEventText>;
}

/** A {@link StoredLogReader} straight over a database, for readers that write nothing. */
export function storedLogReader(db: Kysely<DB>): StoredLogReader {
  return { readSessionText: (sessionId, options) => readSessionText(db, sessionId, options) };
}
