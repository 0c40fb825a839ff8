import type { Kysely } from 'kysely';
import { type DatabaseOptions, openDatabase } from '../db/open-database.js';
import type { DB } from '../db/schema.js';
import type { JsonObject } from '../json/json-value.js';
import { EventStore } from '../store/event-store.js';
import type { SessionLog, SessionLogEntry } from './session-log.js';

/**
 * The runtime's {@link SessionLog} kept in the os-audit event store, so that the agent runtime
 * writes its sessions straight to PostgreSQL (where the projector folds them into the OS
 * snapshot tables) instead of to `<session_id>.jsonl` files.
 *
 * - Each event is validated against the contract before it is sent: an invalid one is rejected
 *   with an `InvalidEventError` naming the session and the field, and nothing is stored.
 * - Any number of writers, in any number of processes, may append to one session at once: each
 *   append is a single statement that locks the session's head row, so every event gets its own
 *   seq, gap-free, and events a writer appends one after the other keep that order.
 * - Events are read back exactly as stored: integers above 2^53 are `bigint`, extra fields and
 *   unknown kinds are kept.
 *
 * @example
 * ```ts
 * const log = PostgresSessionLog.connect({ connectionString: process.env.DATABASE_URL! });
 * const seq = await log.append('session-1', { kind: 'page_in', turn: 1, entry_count: 2 }); // 0
 * const entries = await log.read('session-1'); // [{ seq: 0, event: { kind: 'page_in', … } }]
 * await log.close();
 * ```
 */
export class PostgresSessionLog implements SessionLog {
  /** The store underneath, for what the SDK interface lacks (`expectedSeq`, streaming reads). */
  readonly store: EventStore;
  private ownsDatabase = false;

  /** Uses `db` (from `openDatabase`), which stays the caller's to close. */
  constructor(readonly db: Kysely<DB>) {
    this.store = new EventStore(db);
  }

  /**
   * Opens a connection pool of its own, which {@link close} ends.
   *
   * @example
   * ```ts
   * const log = PostgresSessionLog.connect({ connectionString: 'postgres://127.0.0.1/os_audit', maxConnections: 4 });
   * ```
   */
  static connect(options: DatabaseOptions): PostgresSessionLog {
    const log = new PostgresSessionLog(openDatabase(options));
    log.ownsDatabase = true;
    return log;
  }

  async append(sessionId: string, event: JsonObject): Promise<number> {
    const [seq] = await this.store.append(sessionId, [event]);
    return seq!;
  }

  /** Appends `events` together, all or nothing, at consecutive seqs; resolves to those seqs. */
  appendMany(sessionId: string, events: readonly JsonObject[]): Promise<number[]> {
    return this.store.append(sessionId, events);
  }

  /**
   * A negative `fromSeq` reads from 0 (as the SDKs' `seq >= fromSeq` filter does); one that is
   * not an integer is a `RangeError`.
   */
  async read(sessionId: string, fromSeq = 0): Promise<SessionLogEntry[]> {
    if (!Number.isSafeInteger(fromSeq)) throw new RangeError(`fromSeq must be an integer, got ${String(fromSeq)}`);
    const entries: SessionLogEntry[] = [];
    for await (const { seq, event } of this.store.readSession(sessionId, { fromSeq: Math.max(0, fromSeq) })) {
      entries.push({ seq, event });
    }
    return entries;
  }

  async latestSeq(sessionId: string): Promise<number> {
    return this.store.lastSeq(sessionId);
  }

  /** Ends the pool opened by {@link connect}; a database passed to the constructor is left open. */
  async close(): Promise<void> {
    if (this.ownsDatabase) await this.db.destroy();
  }
}
