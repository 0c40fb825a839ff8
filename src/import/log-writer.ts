import type { EncodedEvent } from '../store/encode-event.js';
import type { EventStore } from '../store/event-store.js';
import { type EventOrigin, InvalidEventError } from '../store/invalid-event-error.js';
import { emptyRows, type EventRows, pushRow } from '../store/sql/event-rows.js';

/** Events a writer holds before it stores them: bounds memory, and the work of one write. */
export const DEFAULT_CHUNK_SIZE = 2000;

/** What a writer stored, and what it found already stored. */
export interface WriteCounts {
  newEvents: number;
  existingEvents: number;
}

interface PendingEvent {
  sessionId: string;
  seq: number;
  event: EncodedEvent;
  origin: EventOrigin;
}

/**
 * Writes numbered events of any number of sessions inside one transaction, a chunk at a time
 * (a few statements per chunk, whatever its size), so an input of any size is stored with
 * bounded memory.
 *
 * It enforces what an import promises: each session's seqs come in order without gaps;
 * events already stored are checked to be identical (a re-import stores nothing new) and a
 * differing body is a conflict; new events must continue the stored log. Any violation throws
 * an {@link InvalidEventError} naming file and line, and the caller rolls the transaction back.
 */
export class LogWriter {
  readonly counts: WriteCounts = { newEvents: 0, existingEvents: 0 };
  private pending: PendingEvent[] = [];
  private readonly lastSeqInInput = new Map<string, number>();

  constructor(
    private readonly store: EventStore,
    private readonly chunkSize = DEFAULT_CHUNK_SIZE,
  ) {}

  async add(sessionId: string, seq: number, event: EncodedEvent, origin: EventOrigin): Promise<void> {
    const previous = this.lastSeqInInput.get(sessionId);
    if (previous !== undefined && seq !== previous + 1) {
      const problem = seq <= previous ? 'out of order' : 'a gap';
      throw new InvalidEventError(origin, `seq ${seq} after seq ${previous} of the same session is ${problem}`);
    }
    this.lastSeqInInput.set(sessionId, seq);
    this.pending.push({ sessionId, seq, event, origin });
    if (this.pending.length >= this.chunkSize) await this.flush();
  }

  /** Stores what is pending; call once more at the end of the input. */
  async flush(): Promise<void> {
    const chunk = this.pending;
    if (chunk.length === 0) return;
    this.pending = [];
    const heads = await this.store.lastSeqs([...new Set(chunk.map((pending) => pending.sessionId))]);

    const stored = emptyRows();
    const storedOrigins: EventOrigin[] = [];
    const fresh = emptyRows();
    const nextSeq = new Map<string, number>();
    for (const pending of chunk) {
      const head = heads.get(pending.sessionId) ?? -1;
      if (pending.seq <= head) {
        pushRow(stored, pending.sessionId, pending.seq, pending.event);
        storedOrigins.push(pending.origin);
        continue;
      }
      const expected = nextSeq.get(pending.sessionId) ?? head + 1;
      if (pending.seq !== expected) {
        throw new InvalidEventError(
          pending.origin,
          `a gap: the stored log of this session ends at seq ${head}, so the next event must have seq ${head + 1}`,
        );
      }
      nextSeq.set(pending.sessionId, expected + 1);
      pushRow(fresh, pending.sessionId, pending.seq, pending.event);
    }

    await this.checkAlreadyStored(stored, storedOrigins);
    await this.store.appendSequenced(fresh);
    this.counts.existingEvents += stored.seqs.length;
    this.counts.newEvents += fresh.seqs.length;
  }

  private async checkAlreadyStored(rows: EventRows, origins: readonly EventOrigin[]): Promise<void> {
    const mismatch = await this.store.findFirstMismatch(rows);
    if (mismatch === -1) return;
    throw new InvalidEventError(
      origins[mismatch]!,
      'conflict: this seq is already stored with a different event (history is never rewritten)',
    );
  }
}
