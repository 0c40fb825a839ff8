import type { Kysely } from 'kysely';
import { type DatabaseOptions, openDatabase } from '../db/open-database.js';
import type { ConnectionRetry } from '../db/retry-on-connection-loss.js';
import type { DB } from '../db/schema.js';
import { parseJson } from '../json/parse-json.js';
import type { JsonValue } from '../json/json-value.js';
import { checkSessionId, type EncodedEvent, encodeEventValue, encodeSdkEvent } from '../events/encode-event.js';
import type { Limits } from '../events/limits.js';
import type { EventOrigin } from '../events/invalid-event-error.js';
import { EventStore } from '../store/event-store.js';
import { readStoredEvent } from '../stored-log/read-stored-event.js';
import { type JournalErrorClasses, PostgresKernelJournal } from './postgres-kernel-journal.js';
import type { KernelPrimitive, SessionLog, SessionLogEntry, SessionLogEvent } from './session-log.js';

/**
 * The kinds of the kernel primitives `syscall` and `mm` (every other kind is `sched`), as the
 * SDK maps them (`primitiveForKind` in `node/src/runtime/kernel-event-log.ts`).
 *
 * @example
 * ```ts
 * const primitives: KernelPrimitiveKinds = { ...KERNEL_PRIMITIVES_V0_2_60, mm: [...KERNEL_PRIMITIVES_V0_2_60.mm, 'summary_upgraded'] };
 * const log = PostgresSessionLog.connect({ connectionString: process.env.DATABASE_URL!, primitives });
 * ```
 */
export interface KernelPrimitiveKinds {
  readonly syscall: readonly string[];
  readonly mm: readonly string[];
}

/**
 * The SDK's map at v0.2.60 (the default).
 *
 * @example
 * ```ts
 * KERNEL_PRIMITIVES_V0_2_60.syscall; // ['tool_gated', 'capability_changed']
 * ```
 */
export const KERNEL_PRIMITIVES_V0_2_60: KernelPrimitiveKinds = {
  syscall: ['tool_gated', 'capability_changed'],
  mm: ['compressed', 'page_out', 'page_in', 'page_in_requested', 'renewed', 'context_renewed', 'memory_written', 'memory_queried', 'memory_validation_failed'],
};

/**
 * The SDK's map at 0.2.36 (commit 5c2a79c): `large_result_spooled` was `mm` too.
 *
 * @example
 * ```ts
 * const log = PostgresSessionLog.connect({ connectionString: process.env.DATABASE_URL!, primitives: KERNEL_PRIMITIVES_V0_2_36 });
 * await log.read('session-1', 0, 'mm'); // large_result_spooled events among them
 * ```
 */
export const KERNEL_PRIMITIVES_V0_2_36: KernelPrimitiveKinds = {
  syscall: KERNEL_PRIMITIVES_V0_2_60.syscall,
  mm: [...KERNEL_PRIMITIVES_V0_2_60.mm, 'large_result_spooled'],
};

/**
 * How a {@link PostgresSessionLog} reads events back, filters them by kernel primitive and
 * reports kernel journal failures; {@link PostgresSessionLog.connect} takes these with the
 * database's options.
 *
 * @example
 * ```ts
 * const log = new PostgresSessionLog(openDatabase({ connectionString: process.env.DATABASE_URL! }), { values: 'exact' });
 * ```
 */
export interface PostgresSessionLogOptions extends Limits {
  /**
   * How `read` gives events back: `'plain'` (default) as `JSON.parse` gives them, as the SDKs'
   * own logs do; `'exact'` through `parseJson`, integers above 2^53 as `bigint` and numbers
   * written with a fraction or an exponent as `JsonFloat` (for audit code).
   *
   * Appends store what `JSON.stringify(event)` writes either way (`toJSON` called, `undefined`
   * members left out, `NaN` and `Infinity` written `null`). With `'exact'` they also take the
   * values such reads give, and write them as they were read: a `bigint` as its digits, a
   * `JsonFloat` as its text, `-0` as `-0` (see `stringifyJson`).
   */
  values?: 'plain' | 'exact';
  /**
   * How long appends, reads and the kernel journal keep trying while the connection to
   * PostgreSQL is lost (a killed connection, a server restart, a failover); default 60 s, then a
   * `ConnectionLostError` (`retryable`, `stored: false`). An append is never stored twice by it.
   * `false`: fail at once.
   */
  connectionRetry?: ConnectionRetry | false;
  /** The kinds of each kernel primitive, for `read`'s `primitiveFilter`; default {@link KERNEL_PRIMITIVES_V0_2_60}. */
  primitives?: KernelPrimitiveKinds;
  /**
   * The error classes {@link PostgresSessionLog.kernelJournal} throws: the SDK's own
   * (`JournalCasConflictError`, …), for code that tests `instanceof` against them. By default
   * os-audit's, which carry the same names (the runtime tells them apart by name).
   */
  journalErrors?: JournalErrorClasses;
}

/** One append (of one or more events, stored together) waiting for its turn, with what to tell its caller. */
interface QueuedAppend {
  events: EncodedEvent[];
  resolve: (seqs: number[]) => void;
  reject: (error: unknown) => void;
}

/**
 * The runtime's {@link SessionLog} kept in the os-audit event store, a drop-in for the SDKs'
 * `FileSessionLog` and `InMemorySessionLog`. The agent runtime writes its sessions straight to
 * PostgreSQL, where the projector folds them into the snapshot tables. It keeps its kernel
 * journal there too ({@link kernelJournal}).
 *
 * - **Stored as written.** Each event is stored as `JSON.stringify` writes it (as the SDKs'
 *   file log does): any object with a non-empty string `kind`. An event that is not one is
 *   rejected with an `InvalidEventError` naming the session, and nothing is stored.
 * - **Call order.** Appends to one session on one instance take seqs in the order they were
 *   called, even when started together (`Promise.all`): while one is on its way, the next ones
 *   wait and then go together, in one statement. Should the database refuse it, each goes
 *   again alone: one caller's refused event fails that caller's append only.
 * - **Many writers.** Any number of instances, in any number of processes, may append to one
 *   session at once: each append locks the session's head row, so every event gets its own
 *   seq, gap-free.
 * - **Rides through a lost connection** (a killed connection, a server restart): appends,
 *   reads and the kernel journal go again on a new connection for `connectionRetry`, and an
 *   append is never stored twice by it (see `EventStore.append`); then a `ConnectionLostError`.
 * - **Read back** as plain values (`JSON.parse` of what was written, keys in written order), or
 *   exactly with `values: 'exact'`.
 *
 * Its type parameter is the runtime's event type (`SessionEvent` of the SDK). Left out, it is
 * `any`, so that the log is a `SessionLog` of the SDK of any version as it is, without a cast;
 * given, appends and reads are typed.
 *
 * @example
 * ```ts
 * import { FileSessionLog, type SessionEvent } from '@deepstrike/sdk';
 * const log = PostgresSessionLog.connect<SessionEvent>({ connectionString: process.env.DATABASE_URL! });
 * const seq = await log.append('session-1', { kind: 'page_in', turn: 1, entry_count: 2 }); // 0
 * const entries = await log.read('session-1'); // [{ seq: 0, event: { kind: 'page_in', … } }]
 * await log.close();
 * ```
 */
export class PostgresSessionLog<Event extends SessionLogEvent = any> implements SessionLog<Event> {
  /** The store underneath, for what the SDK interface lacks (`expectedSeq`, streaming reads). */
  readonly store: EventStore;
  /** The runtime's kernel journal (v0.2.60's `KernelJournal`) in the same database. */
  readonly kernelJournal: PostgresKernelJournal;
  private ownsDatabase = false;
  private readonly parse: (text: string) => Event;
  private readonly encode: (event: Event, origin: EventOrigin) => EncodedEvent;
  private readonly primitives: KernelPrimitiveKinds;
  private readonly limits: Limits;
  /** Per session: the appends waiting while one is on its way (present while one is). */
  private readonly queues = new Map<string, QueuedAppend[]>();

  /** Uses `db` (from `openDatabase`), which stays the caller's to close. */
  constructor(
    readonly db: Kysely<DB>,
    options: PostgresSessionLogOptions = {},
  ) {
    this.store = new EventStore(db, { connectionRetry: options.connectionRetry });
    this.kernelJournal = new PostgresKernelJournal(db, { errors: options.journalErrors, connectionRetry: options.connectionRetry });
    const exact = options.values === 'exact';
    this.parse = (exact ? parseJson : JSON.parse) as (text: string) => Event;
    // Both store JSON.stringify's text; only stringifyJson writes bigint and JsonFloat, the native one is faster.
    this.limits = { maxEventBytes: options.maxEventBytes, maxSessionIdBytes: options.maxSessionIdBytes };
    this.encode = exact
      ? (event, origin) => encodeEventValue(event as unknown as JsonValue, origin, this.limits)
      : (event, origin) => encodeSdkEvent(event, origin, this.limits);
    this.primitives = options.primitives ?? KERNEL_PRIMITIVES_V0_2_60;
  }

  /**
   * Opens a connection pool of its own, which {@link close} ends.
   *
   * @example
   * ```ts
   * const log = PostgresSessionLog.connect({ connectionString: 'postgres://127.0.0.1/os_audit', maxConnections: 4 });
   * ```
   */
  static connect<Event extends SessionLogEvent = any>(options: DatabaseOptions & PostgresSessionLogOptions): PostgresSessionLog<Event> {
    const log = new PostgresSessionLog<Event>(openDatabase(options), options);
    log.ownsDatabase = true;
    return log;
  }

  /** Appends `event` at the end of the session's log, after every append this instance was called with before. */
  async append(sessionId: string, event: Event): Promise<number> {
    const [seq] = await this.appendMany(sessionId, [event]);
    return seq!;
  }

  /** Appends `events` together, all or nothing, at consecutive seqs; resolves to those seqs. */
  appendMany(sessionId: string, events: readonly Event[]): Promise<number[]> {
    return new Promise<number[]>((resolve, reject) => {
      // Checked now: a refused event fails its own call only, and nothing of it is stored.
      checkSessionId(sessionId, {}, this.limits);
      const encoded = events.map((event, index) => this.encode(event, events.length === 1 ? { sessionId } : { sessionId, index }));
      if (encoded.length === 0) return resolve([]);
      const queued = { events: encoded, resolve, reject };
      const queue = this.queues.get(sessionId);
      if (queue !== undefined) {
        queue.push(queued);
        return;
      }
      this.queues.set(sessionId, []);
      void this.drain(sessionId, [queued]);
    });
  }

  /** Stores a group of appends, then each group that gathered meanwhile, until none waits. */
  private async drain(sessionId: string, first: QueuedAppend[]): Promise<void> {
    let group = first;
    for (;;) {
      await this.storeGroup(sessionId, group);
      const waiting = this.queues.get(sessionId)!;
      if (waiting.length === 0) break;
      this.queues.set(sessionId, []);
      group = waiting;
    }
    this.queues.delete(sessionId);
  }

  /**
   * Stores a group of appends in one statement and settles each. When the database refuses the
   * statement, nothing of it is stored: each append is then stored alone, in order, so that
   * one caller's event the database refuses fails that caller only.
   */
  private async storeGroup(sessionId: string, group: readonly QueuedAppend[]): Promise<void> {
    try {
      const seqs = await this.store.appendEncoded(sessionId, group.flatMap((queued) => queued.events), this.limits);
      let next = 0;
      for (const queued of group) {
        queued.resolve(seqs.slice(next, next + queued.events.length));
        next += queued.events.length;
      }
    } catch (error) {
      if (group.length > 1 && refusedByDatabase(error)) {
        for (const queued of group) await this.storeGroup(sessionId, [queued]);
      } else {
        for (const queued of group) queued.reject(error);
      }
    }
  }

  /**
   * The session's events from `fromSeq` on, of the kinds of `primitiveFilter` when given. A
   * negative `fromSeq` reads from 0 (as the SDKs' `seq >= fromSeq` filter does); one that is
   * not an integer is a `RangeError`. A stored event that is no event (written around the
   * store) is a `CorruptEventError` naming its session and seq.
   */
  async read(sessionId: string, fromSeq = 0, primitiveFilter?: KernelPrimitive): Promise<SessionLogEntry<Event>[]> {
    if (!Number.isSafeInteger(fromSeq)) throw new RangeError(`fromSeq must be an integer, got ${String(fromSeq)}`);
    const entries: SessionLogEntry<Event>[] = [];
    const filter =
      primitiveFilter === undefined
        ? {}
        : primitiveFilter === 'sched'
          ? { notKinds: [...this.primitives.syscall, ...this.primitives.mm] }
          : // An unknown primitive matches no kind, as the SDKs' filter matches none.
            { kinds: this.primitives[primitiveFilter] ?? [] };
    for await (const stored of this.store.readSessionText(sessionId, { fromSeq: Math.max(0, fromSeq), ...filter })) {
      entries.push({ seq: stored.seq, event: readStoredEvent<Event>(stored, this.parse) });
    }
    return entries;
  }

  /** The seq of the session's last event, or -1 for a session without events. */
  async latestSeq(sessionId: string): Promise<number> {
    return this.store.lastSeq(sessionId);
  }

  /** Ends the pool opened by {@link connect}; a database passed to the constructor is left open. */
  async close(): Promise<void> {
    if (this.ownsDatabase) await this.db.destroy();
  }
}

/**
 * Whether PostgreSQL refused a statement with an ERROR, which rolls its transaction back:
 * nothing of it is stored. (After a FATAL error or a lost connection that is not known.)
 */
function refusedByDatabase(error: unknown): boolean {
  return error instanceof Error && (error as { severity?: unknown }).severity === 'ERROR';
}
