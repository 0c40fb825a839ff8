import type { JsonObject } from '../json/json-value.js';

/**
 * Where a session's events are read from, and how many rows each round trip fetches.
 *
 * @example
 * ```ts
 * for await (const stored of store.readSession('session-1', { fromSeq: 100, pageSize: 500 })) console.log(stored.seq);
 * ```
 */
export interface ReadSessionOptions {
  /** First seq to return; default 0. */
  fromSeq?: number;
  /** Rows fetched per round trip; default 1000. */
  pageSize?: number;
}

/** {@link ReadSessionOptions}, and which kinds to read or leave out. */
export interface ReadSessionTextOptions extends ReadSessionOptions {
  kinds?: readonly string[];
  notKinds?: readonly string[];
}

/**
 * One stored event as its JSON text, exactly as it was written (white space between tokens removed).
 *
 * @example
 * ```ts
 * for await (const { seq, text } of store.readSessionText('session-1')) console.log(seq, text);
 * // 0 '{"kind":"page_in","turn":1,"entry_count":2}'
 * ```
 */
export interface StoredEventText {
  sessionId: string;
  seq: number;
  /** Global position in the store (the order of insertion, not of commit). */
  position: number;
  kind: string;
  recordedAt: Date;
  /** The event's JSON text: key order, numbers and strings as written. */
  text: string;
}

/** One stored event, read back exactly as it was appended. */
export interface StoredEvent extends StoredEventText {
  /** The event, with integers above 2^53 as `bigint` and floats as `JsonFloat` (see `parseJson`). */
  event: JsonObject;
}
