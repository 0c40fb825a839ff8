import type { JsonObject } from '../json/json-value.js';

/** One event of a session log with its seq: a line `{"seq": N, "event": {…}}` of the SDKs' `<session_id>.jsonl`. */
export interface SessionLogEntry {
  seq: number;
  /** The event exactly as stored: integers above 2^53 as `bigint`, see {@link JsonObject}. */
  event: JsonObject;
}

/**
 * The agent runtime's session log, with the shape of the deepstrike SDKs' `SessionLog` (whose
 * `FileSessionLog` keeps one `<session_id>.jsonl` per session): each session is an ordered,
 * append-only list of events numbered by `seq` from 0, without gaps.
 *
 * @example
 * ```ts
 * async function replay(log: SessionLog, sessionId: string): Promise<void> {
 *   const next = (await log.latestSeq(sessionId)) + 1;
 *   await log.append(sessionId, { kind: 'page_in', turn: next, entry_count: 1 }); // resolves to `next`
 *   for (const { seq, event } of await log.read(sessionId)) console.log(seq, event.kind);
 * }
 * ```
 */
export interface SessionLog {
  /** Appends `event` at the end of the session's log; resolves to the seq it got (the next one, 0 for a new session). */
  append(sessionId: string, event: JsonObject): Promise<number>;
  /** The session's events whose seq is `fromSeq` (default 0) or more, in seq order; `[]` for an unknown session. */
  read(sessionId: string, fromSeq?: number): Promise<SessionLogEntry[]>;
  /** The seq of the session's last event; -1 for a session without events. */
  latestSeq(sessionId: string): Promise<number>;
}
