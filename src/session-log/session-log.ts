/** An event as the runtime's SDKs type it: a plain object tagged by its `kind`. */
export interface SessionLogEvent {
  kind: string;
  [field: string]: unknown;
}

/** One event of a session log with its seq: a line `{"seq": N, "event": {…}}` of the SDKs' `<session_id>.jsonl`. */
export interface SessionLogEntry<Event = SessionLogEvent> {
  seq: number;
  event: Event;
}

/** The runtime's kernel primitives, by which `read` can filter a log (`primitiveForKind` in the SDKs). */
export type KernelPrimitive = 'syscall' | 'sched' | 'mm';

/**
 * The agent runtime's session log, with the shape of the deepstrike SDKs' `SessionLog`: the
 * same at SDK 0.2.36 and v0.2.60, whose `FileSessionLog` keeps one `<session_id>.jsonl` per
 * session. Each session is an ordered, append-only list of events numbered by `seq` from 0,
 * without gaps.
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
export interface SessionLog<Event extends SessionLogEvent = SessionLogEvent> {
  /** Appends `event` at the end of the session's log; resolves to the seq it got (the next one, 0 for a new session). */
  append(sessionId: string, event: Event): Promise<number>;
  /**
   * The session's events whose seq is `fromSeq` (default 0) or more, in seq order, of the kinds
   * of `primitiveFilter` when it is given; `[]` for an unknown session.
   */
  read(sessionId: string, fromSeq?: number, primitiveFilter?: KernelPrimitive): Promise<SessionLogEntry<Event>[]>;
  /** The seq of the session's last event; -1 for a session without events. */
  latestSeq(sessionId: string): Promise<number>;
}
