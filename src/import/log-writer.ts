import type { EncodedEvent } from '../events/encode-event.js';
import type { EventStore } from '../store/event-store.js';
import { type EventOrigin, InvalidEventError } from '../events/invalid-event-error.js';
import { emptyRows, type EventRows, pushRow } from '../store/sql/event-rows.js';
import { DEFAULT_CHUNK_SIZE } from './default-chunk-size.js';

/**
 * Characters of event text a writer holds before it stores them, whatever the chunk size: a
 * chunk of large events must fit in memory and in one statement (PostgreSQL takes 1 GB at most).
 */
export const MAX_CHUNK_CHARS = 32 * 2 ** 20;

/** What a writer stored, and what it found already stored. */
export interface WriteCounts {
  newEvents: number;
  /** Events stored before, by an earlier import or by an earlier line of this input with the same seq. */
  existingEvents: number;
}

interface PendingEvent {
  sessionId: string;
  seq: number;
  event: EncodedEvent;
  origin: EventOrigin;
}

/** Where one session of the input stands. */
interface SessionCursor {
  /** The session's last stored seq when the writer first met it (-1: none). */
  storedHead: number;
  /** The seq the next new event must have. */
  next: number;
  /** Events that came before their turn (seq above `next`), by seq, held until it comes. */
  early: Map<number, PendingEvent>;
}

/**
 * Writes numbered events of any number of sessions inside one transaction, a chunk at a time
 * (a few statements per chunk, whatever its size), so an input of any size is stored with
 * bounded memory.
 *
 * It enforces what an import promises:
 * - Each session's events are stored in seq order, gap-free, continuing its stored log. Lines
 *   may come in any order: an event whose seq is above the next one to store is held until
 *   that seq has come. In-order input holds nothing; otherwise memory grows with the events
 *   that came early (the whole session, for a file written backwards).
 * - An event whose seq is already stored (by an earlier import, or by an earlier line of this
 *   input) must be identical to the stored one: it is counted as existing, and a differing
 *   body is a conflict. Two early lines with one seq must be identical too.
 * - At the end ({@link finish}), a seq that never came while later ones did is a gap.
 *
 * A violation throws an {@link InvalidEventError} naming file and line, and the caller rolls
 * the transaction back.
 */
export class LogWriter {
  readonly counts: WriteCounts = { newEvents: 0, existingEvents: 0 };
  private pending: PendingEvent[] = [];
  private pendingChars = 0;
  private readonly cursors = new Map<string, SessionCursor>();

  constructor(
    private readonly store: EventStore,
    private readonly chunkSize = DEFAULT_CHUNK_SIZE,
  ) {}

  async add(sessionId: string, seq: number, event: EncodedEvent, origin: EventOrigin): Promise<void> {
    this.pending.push({ sessionId, seq, event, origin });
    this.pendingChars += event.payload.length + (event.payloadText?.length ?? 0);
    if (this.pending.length >= this.chunkSize || this.pendingChars >= MAX_CHUNK_CHARS) await this.flush();
  }

  /** Stores what is pending and checks that no session has a gap; call once, at the end of the input. */
  async finish(): Promise<WriteCounts> {
    await this.flush();
    for (const cursor of this.cursors.values()) {
      if (cursor.early.size > 0) throw missingSeqError(cursor);
    }
    return this.counts;
  }

  private async flush(): Promise<void> {
    const chunk = this.pending;
    if (chunk.length === 0) return;
    this.pending = [];
    this.pendingChars = 0;
    await this.openCursors(chunk);

    const fresh = emptyRows();
    const stored = emptyRows();
    const storedOrigins: EventOrigin[] = [];
    for (const pending of chunk) {
      const cursor = this.cursors.get(pending.sessionId)!;
      if (pending.seq < cursor.next) {
        pushRow(stored, pending.sessionId, pending.seq, pending.event);
        storedOrigins.push(pending.origin);
      } else if (pending.seq > cursor.next) {
        this.holdEarly(cursor, pending);
      } else {
        for (let next: PendingEvent | undefined = pending; next !== undefined; next = takeEarly(cursor)) {
          pushRow(fresh, next.sessionId, next.seq, next.event);
          cursor.next += 1;
        }
      }
    }

    // Stored first: an event may repeat the seq of one stored by this very chunk.
    await this.store.appendSequenced(fresh);
    await this.checkAlreadyStored(stored, storedOrigins);
    this.counts.newEvents += fresh.seqs.length;
    this.counts.existingEvents += stored.seqs.length;
  }

  /** A cursor for each session met for the first time, at the end of its stored log. */
  private async openCursors(chunk: readonly PendingEvent[]): Promise<void> {
    const unseen = [...new Set(chunk.map((pending) => pending.sessionId))].filter((sessionId) => !this.cursors.has(sessionId));
    const heads = await this.store.lastSeqs(unseen);
    for (const sessionId of unseen) {
      const storedHead = heads.get(sessionId) ?? -1;
      this.cursors.set(sessionId, { storedHead, next: storedHead + 1, early: new Map() });
    }
  }

  private holdEarly(cursor: SessionCursor, pending: PendingEvent): void {
    const first = cursor.early.get(pending.seq);
    if (first === undefined) {
      cursor.early.set(pending.seq, pending);
    } else if (sameEvent(first.event, pending.event)) {
      this.counts.existingEvents += 1;
    } else {
      throw new InvalidEventError(pending.origin, `conflict: ${describeLine(first.origin)} has this seq with a different event`);
    }
  }

  private async checkAlreadyStored(rows: EventRows, origins: readonly EventOrigin[]): Promise<void> {
    const mismatch = await this.store.findFirstMismatch(rows);
    if (mismatch === -1) return;
    const cursor = this.cursors.get(rows.sessionIds[mismatch]!)!;
    const storedBy = rows.seqs[mismatch]! > cursor.storedHead ? 'by an earlier line of this input ' : '';
    throw new InvalidEventError(
      origins[mismatch]!,
      `conflict: this seq is already stored ${storedBy}with a different event (history is never rewritten)`,
    );
  }
}

/** The early event whose turn has come, if it is there. */
function takeEarly(cursor: SessionCursor): PendingEvent | undefined {
  const event = cursor.early.get(cursor.next);
  cursor.early.delete(cursor.next);
  return event;
}

function sameEvent(a: EncodedEvent, b: EncodedEvent): boolean {
  return a.payload === b.payload && a.payloadText === b.payloadText;
}

/** The input ended while a session still waits for `cursor.next`: named at the first line after the gap. */
function missingSeqError(cursor: SessionCursor): InvalidEventError {
  let firstAfter: PendingEvent | undefined;
  for (const event of cursor.early.values()) if (firstAfter === undefined || event.seq < firstAfter.seq) firstAfter = event;
  const stored = cursor.next === cursor.storedHead + 1 && cursor.storedHead >= 0 ? ` (the stored log of this session ends at seq ${cursor.storedHead})` : '';
  return new InvalidEventError(firstAfter!.origin, `a gap: seq ${cursor.next} is missing${stored}; the input ends without it`);
}

function describeLine(origin: EventOrigin): string {
  return origin.line === undefined ? 'an earlier event' : `line ${origin.line}`;
}
