import { setImmediate } from 'node:timers/promises';
import { type Kysely, sql } from 'kysely';
import type pg from 'pg';
import { ConnectionLostError, isConnectionLoss } from '../db/connection-loss.js';
import { distributedWorkEnded, isStoreDistributed, notifyAppended, notifyAppendedOnCitus } from '../db/distributed-store.js';
import { exactInteger } from '../db/exact-integer.js';
import { poolOf } from '../db/open-database.js';
import { throwAsDiskFull } from '../db/disk-full.js';
import { type ConnectionRetry, retryOnConnectionLoss } from '../db/retry-on-connection-loss.js';
import { sleep } from '../time/sleep.js';
import { withPinnedConnection } from '../db/pinned-connection.js';
import type { DB } from '../db/schema.js';
import type { JsonObject, JsonValue } from '../json/json-value.js';
import { ConcurrencyError } from './concurrency-error.js';
import { checkSessionId, type EncodedEvent, type EncodeOptions, encodeEventValue } from '../events/encode-event.js';
import type { Limits } from '../events/limits.js';
import { appendAtHeadSql, type HeadReserved, insertEventsSql, moveHeadFromSql, moveHeadSql, reserveSeqsSql } from './sql/append-at-head.js';
import { copyEvents, eventRowsText, sessionEventsText } from './sql/copy-events.js';
import { advanceHeadsSql, appendSequencedSql, type SessionSpans } from './sql/append-sequenced.js';
import { emptyRows, type EventRows, pushRow } from './sql/event-rows.js';
import { findFirstMismatchSql } from './sql/find-first-mismatch.js';
import { readSession, readSessionText } from '../stored-log/read-session.js';
import type { ReadSessionOptions, ReadSessionTextOptions, StoredEvent, StoredEventText } from '../stored-log/stored-event.js';

/**
 * How an {@link EventStore} rides through a lost connection.
 *
 * @example
 * ```ts
 * const store = new EventStore(db, { connectionRetry: { retryForMs: 10_000 } });
 * ```
 */
export interface EventStoreOptions {
  /** How long to keep trying while the connection is lost; `false`: fail at once. Default: for 60 s. */
  connectionRetry?: ConnectionRetry | false;
}

/** Events per statement of an append at the head (larger appends take several, in one transaction). */
const APPEND_SLICE = 250;

/**
 * How {@link EventStore.append} checks a batch, and where it must find the log.
 *
 * @example
 * ```ts
 * await store.append('session-1', [{ kind: 'page_in', turn: 1, entry_count: 2 }], { expectedSeq: -1 }); // a new session
 * ```
 */
export interface AppendOptions extends EncodeOptions {
  /**
   * The seq of the last event the writer saw, -1 for a session it believes empty. When the
   * log ends elsewhere, nothing is appended and a {@link ConcurrencyError} is thrown. Without
   * it the events go at the end of the log, wherever that is.
   */
  expectedSeq?: number;
}

/**
 * The append-only store of session logs.
 *
 * @example
 * ```ts
 * const store = new EventStore(openDatabase({ connectionString: process.env.DATABASE_URL! }));
 * const seqs = await store.append('session-1', [{ kind: 'page_in', turn: 1, entry_count: 2 }]);
 * for await (const stored of store.readSession('session-1')) console.log(stored.seq, stored.event);
 * ```
 */
export class EventStore {
  /** The connection under this store's transaction, for `COPY` (see {@link transaction}). */
  private copyClient: pg.PoolClient | undefined;

  private readonly connectionRetry: ConnectionRetry | false;

  /**
   * `db`: from `openDatabase` (or a transaction of one), or a Kysely on a pool of your own. The
   * store reads seqs, positions and counts as numbers whichever way the pool's type parser gives
   * them (numbers as `openDatabase`'s, strings as pg's default), and reads events as text.
   * `connectionRetry`: how long an append or read outside a transaction keeps trying while the
   * connection to PostgreSQL is lost (default: for 60 s, with backoff); `false` fails
   * at once. Appends are never stored twice by it (see {@link append}).
   */
  constructor(
    readonly db: Kysely<DB>,
    options: EventStoreOptions = {},
  ) {
    this.connectionRetry = options.connectionRetry ?? {};
  }

  /**
   * Appends a batch to one session atomically and returns the seqs it got: in one transaction,
   * the session's head locked from its first statement. Should the connection be lost, the
   * append goes again on a new one (within `connectionRetry`) only once it is known that nothing
   * of it was stored (or, with `expectedSeq`, that the stored events are these): never twice.
   * Every event is checked first (a JSON object with a non-empty string `kind`; under `strict`,
   * the Rust core's shape): one that is refused rejects the whole batch
   * ({@link InvalidEventError}). Listeners of `os_audit_events_appended` are woken on commit.
   */
  append(sessionId: string, events: readonly JsonValue[], options: AppendOptions = {}): Promise<number[]> {
    const { expectedSeq } = options;
    return this.appendWith(sessionId, events.length, expectedSeq, options, (from, to) =>
      events.slice(from, to).map((event, offset) => {
        const index = from + offset;
        return encodeEventValue(event, { sessionId, index, seq: expectedSeq === undefined ? undefined : expectedSeq + 1 + index }, options);
      }),
    ).catch(throwAsDiskFull);
  }

  /**
   * {@link append} of events already encoded (`encodeEventText`, `encodeEventValue`,
   * `encodeSdkEvent`, whose options bound their size), as they are.
   */
  appendEncoded(sessionId: string, events: readonly EncodedEvent[], options: { expectedSeq?: number } & Pick<Limits, 'maxSessionIdBytes'> = {}): Promise<number[]> {
    return this.appendWith(sessionId, events.length, options.expectedSeq, options, (from, to) => events.slice(from, to)).catch(throwAsDiskFull);
  }

  private async appendWith(
    sessionId: string,
    count: number,
    expectedSeq: number | undefined,
    limits: Limits,
    encode: (from: number, to: number) => EncodedEvent[],
  ): Promise<number[]> {
    checkSessionId(sessionId, {}, limits);
    if (count === 0) return [];
    if (expectedSeq !== undefined) {
      const events = encode(0, count);
      const rows = emptyRows();
      events.forEach((event, index) => pushRow(rows, sessionId, expectedSeq + 1 + index, event));
      const store = async (attempt: number) => {
        try {
          await this.appendExpected(sessionId, expectedSeq, events, rows);
        } catch (error) {
          // An earlier attempt whose answer the lost connection took may have stored them: then it is done.
          if (attempt > 1 && error instanceof ConcurrencyError && (await this.findFirstMismatch(rows)) === -1) return;
          throw error;
        }
      };
      await (this.db.isTransaction ? store(1) : this.retrying(store));
      return rows.seqs;
    }
    let lastSeq: number;
    if (this.db.isTransaction && (await isStoreDistributed(this.db))) {
      await notifyAppended(this.db);
      lastSeq = (await this.appendRouted(this.db, sessionId, count, encode))!;
    } else if (this.db.isTransaction) {
      lastSeq = (
        this.copyClient !== undefined && count > APPEND_SLICE
          ? await this.copyAtHead(this.copyClient, sessionId, count, encode)
          : await this.appendSlicesAtHead(this.db, sessionId, count, encode)
      ).last_seq;
    } else {
      lastSeq = await this.retrying(() => this.appendAtHeadCommitted(sessionId, count, encode));
    }
    return Array.from({ length: count }, (_, index) => lastSeq - count + 1 + index);
  }

  /**
   * Stores one session's events where its log ends at `expectedSeq`, or throws a
   * {@link ConcurrencyError}. On Citus, in statements routed to the session's shard
   * ({@link appendRouted}), in a transaction that also notifies the projectors.
   */
  private async appendExpected(sessionId: string, expectedSeq: number, events: readonly EncodedEvent[], rows: EventRows): Promise<void> {
    if (!(await isStoreDistributed(this.db))) return this.appendSequenced(rows);
    const append = async (db: Kysely<DB>) => {
      await notifyAppended(db);
      return this.appendRouted(db, sessionId, events.length, (from, to) => events.slice(from, to), expectedSeq);
    };
    const lastSeq = this.db.isTransaction ? await append(this.db) : await this.db.transaction().execute(append);
    if (lastSeq === undefined) throw new ConcurrencyError(sessionId, expectedSeq, await this.lastSeq(sessionId));
  }

  /**
   * On Citus: moves the session's head (from `expectedSeq` when given) and stores the events at
   * the seqs up to it, in statements that Citus sends as they are to the session's shard
   * ({@link insertEventsSql}), inside the caller's transaction. Returns the new head, or
   * `undefined` when the log does not end at `expectedSeq` (nothing stored).
   */
  private async appendRouted(
    db: Kysely<DB>,
    sessionId: string,
    count: number,
    encode: (from: number, to: number) => EncodedEvent[],
    expectedSeq?: number,
  ): Promise<number | undefined> {
    const move = expectedSeq === undefined ? moveHeadSql(sessionId, count) : moveHeadFromSql(sessionId, expectedSeq, count);
    const head = (await move.execute(db)).rows[0];
    if (head === undefined) return undefined;
    let seq = head.last_seq - count + 1;
    for (const slice of slices(count, APPEND_SLICE, encode)) {
      await insertEventsSql(sessionId, seq, slice).execute(db);
      seq += slice.length;
    }
    return head.last_seq;
  }

  /** `work`, tried again while the connection is lost, as this store's `connectionRetry` says. */
  private retrying<T>(work: (attempt: number) => Promise<T>): Promise<T> {
    return this.connectionRetry === false || this.db.isTransaction ? work(1) : retryOnConnectionLoss(work, this.connectionRetry);
  }

  /**
   * An append at the head in a transaction of its own, whose outcome is known even when the
   * connection drops: lost before the commit was sent, nothing is stored; lost during the
   * commit, the transaction's status tells. Either way a {@link ConnectionLostError} says
   * nothing is stored, and the append can go again. On Citus the projectors are
   * notified in the same transaction (the notification goes out on its commit), and the
   * connection's global process id is kept to learn when its work on the worker has ended.
   */
  private async appendAtHeadCommitted(sessionId: string, count: number, encode: (from: number, to: number) => EncodedEvent[]): Promise<number> {
    const notStored = (error: unknown) =>
      new ConnectionLostError(
        `the connection to PostgreSQL was lost before the append to session ${JSON.stringify(sessionId)} committed; nothing of it is stored: ${(error as Error).message}`,
        false,
        { cause: error },
      );
    // Where the connection was lost at the commit: the transaction that may have committed.
    let inDoubt: { head: HeadReserved; globalPid: string | undefined; error: unknown } | undefined;
    let distributed = false;
    const write = async (db: Kysely<DB>, client: pg.PoolClient | undefined): Promise<number> => {
      let head: HeadReserved | undefined;
      let globalPid: string | undefined;
      try {
        await sql`BEGIN`.execute(db);
        if (distributed) {
          const notified = await notifyAppended(db);
          globalPid = notified.globalPid;
          head = { last_seq: (await this.appendRouted(db, sessionId, count, encode))!, transaction_id: notified.transactionId };
        } else {
          head =
            client !== undefined && count > APPEND_SLICE
              ? await this.copyAtHead(client, sessionId, count, encode)
              : await this.appendSlicesAtHead(db, sessionId, count, encode);
        }
        await sql`COMMIT`.execute(db);
        return head.last_seq;
      } catch (error) {
        if (!isConnectionLoss(error)) {
          await sql`ROLLBACK`.execute(db).catch(() => {});
          throw error;
        }
        if (head !== undefined) inDoubt = { head, globalPid, error };
        throw error;
      }
    };
    try {
      distributed = await isStoreDistributed(this.db);
      return poolOf(this.db) === undefined
        ? await this.db.connection().execute((db) => write(db, undefined))
        : await withPinnedConnection(this.db, ({ client, db }) => write(db, client));
    } catch (error) {
      if (!isConnectionLoss(error) || error instanceof ConnectionLostError) throw error;
      // Asked once the broken connection is back in the pool, which may have no other to give.
      if (inDoubt !== undefined && (await this.committedHere(sessionId, inDoubt.head, inDoubt.globalPid, count, encode, inDoubt.error))) return inDoubt.head.last_seq;
      throw notStored(error);
    }
  }

  /**
   * Whether the append whose commit was cut off is stored: once its transaction has ended, its
   * events are at the seqs it was given, written by that transaction. The events themselves are
   * looked at, not only the transaction's status: after a crash, PostgreSQL may hand the id of
   * a transaction that never reached the disk to a later one, whose commit would then answer
   * for it. On Citus the events are on a worker, whose part of the transaction commits before
   * the coordinator's and may still be under way once the coordinator's has ended. So they are
   * looked at once every backend of the connection (`globalPid`) has ended its transaction.
   */
  private async committedHere(
    sessionId: string,
    head: HeadReserved,
    globalPid: string | undefined,
    count: number,
    encode: (from: number, to: number) => EncodedEvent[],
    lost: unknown,
  ): Promise<boolean> {
    const firstSeq = head.last_seq - count + 1;
    const rows = emptyRows();
    encode(0, count).forEach((event, index) => pushRow(rows, sessionId, firstSeq + index, event));
    return this.outcomeOf(head.transaction_id, globalPid, lost, async () => {
      const { rows: written } = await sql<{ count: number }>`
        SELECT count(*)::int AS count FROM session_events
        WHERE session_id = ${sessionId} AND seq BETWEEN ${firstSeq} AND ${head.last_seq} AND transaction_id = ${head.transaction_id}::xid8`.execute(this.db);
      if (written[0]!.count !== count) return false;
      const { rows: mismatch } = await findFirstMismatchSql(rows).execute(this.db);
      return mismatch.length === 0;
    });
  }

  /**
   * `isStored()` once the transaction whose commit may have been cut off has ended, asked on
   * another connection. When that cannot be learned in time, the append's outcome is unknown:
   * a {@link ConnectionLostError} that must not be retried blindly.
   */
  private async outcomeOf(transactionId: string, globalPid: string | undefined, lost: unknown, isStored: () => Promise<boolean>): Promise<boolean> {
    try {
      return await retryOnConnectionLoss(async () => {
        // Still in progress: its server process has not yet seen that its client is gone.
        while ((await sql<{ status: string | null }>`SELECT pg_xact_status(${transactionId}::xid8) AS status`.execute(this.db)).rows[0]!.status === 'in progress') {
          await sleep(50);
        }
        // On Citus, its part on the worker may commit after the coordinator's has ended.
        while (globalPid !== undefined && !(await distributedWorkEnded(this.db, globalPid))) await sleep(50);
        return isStored();
      }, this.connectionRetry || {});
    } catch (error) {
      if (!isConnectionLoss(error)) throw error;
      throw new ConnectionLostError(
        `the connection to PostgreSQL was lost while transaction ${transactionId} committed, and whether it did could not be learned: ` +
          `see SELECT pg_xact_status('${transactionId}') before appending again (${(lost as Error).message})`,
        'unknown',
        { cause: lost },
      );
    }
  }

  /**
   * Moves the head and streams the events in with `COPY`, a slice encoded while the server
   * stores the one before, inside the caller's transaction: the head's row lock keeps other
   * writers of the session waiting until it ends.
   */
  private async copyAtHead(
    client: pg.PoolClient,
    sessionId: string,
    count: number,
    encode: (from: number, to: number) => EncodedEvent[],
  ): Promise<HeadReserved> {
    const reserve = reserveSeqsSql(sessionId, count).compile(this.db);
    const head = (await client.query<HeadReserved>(reserve.sql, [...reserve.parameters])).rows[0]!;
    await copyEvents(client, sessionEventsText(sessionId, head.last_seq - count + 1, slices(count, APPEND_SLICE, encode)));
    return head;
  }

  /**
   * Appends `count` events at the head, a slice per statement, and returns the new head. The
   * next slice is validated and encoded while the server stores the one before: a large append
   * of one writer costs about the larger of its client and server work, not their sum.
   */
  private async appendSlicesAtHead(
    db: Kysely<DB>,
    sessionId: string,
    count: number,
    encode: (from: number, to: number) => EncodedEvent[],
  ): Promise<HeadReserved> {
    const statements: Promise<{ rows: HeadReserved[] }>[] = [];
    try {
      for (const slice of slices(count, APPEND_SLICE, encode)) {
        const statement = appendAtHeadSql(sessionId, slice).execute(db);
        // Its failure is thrown below, once all are sent; meanwhile it is not an unhandled rejection.
        statement.catch(() => {});
        statements.push(statement);
        // Let the driver send the statement before the CPU goes to the next slice.
        await setImmediate();
      }
      const results = await Promise.all(statements);
      return results.at(-1)!.rows[0]!;
    } catch (error) {
      await Promise.allSettled(statements);
      throw error;
    }
  }

  /**
   * Stores rows whose seqs are already chosen (an import), for many sessions at once: in one
   * statement, or inside {@link transaction} with `COPY` for more than a few hundred rows.
   * Each session's rows must continue its stored log; otherwise nothing of them is kept by
   * the caller's transaction and a {@link ConcurrencyError} names the first session.
   */
  async appendSequenced(rows: EventRows): Promise<void> {
    if (rows.seqs.length === 0) return;
    // On Citus, in a transaction of its own: the projectors are notified on its commit.
    if (!this.db.isTransaction && (await isStoreDistributed(this.db))) return this.transaction((store) => store.appendSequenced(rows));
    if (this.copyClient !== undefined && rows.seqs.length > APPEND_SLICE) {
      const spans = sessionSpans(rows);
      const { advanced } = (await advanceHeadsSql(spans).execute(this.db)).rows[0]!;
      if (advanced.length !== spans.sessionIds.length) throw await this.notAdvanced(rows, advanced);
      await copyEvents(this.copyClient, eventRowsText(rows, APPEND_SLICE));
    } else {
      const result = (await appendSequencedSql(rows).execute(this.db)).rows[0]!;
      if (exactInteger(result.inserted) !== rows.seqs.length) throw await this.notAdvanced(rows, result.advanced);
    }
    await notifyAppendedOnCitus(this.db);
  }

  /** The conflict of the first row whose session did not advance. */
  private async notAdvanced(rows: EventRows, advancedSessions: readonly string[]): Promise<ConcurrencyError> {
    const advanced = new Set(advancedSessions);
    const index = rows.sessionIds.findIndex((sessionId) => !advanced.has(sessionId));
    const sessionId = rows.sessionIds[index]!;
    return new ConcurrencyError(sessionId, rows.seqs[index]! - 1, await this.lastSeq(sessionId));
  }

  /**
   * Of rows that should already be stored, the index in `rows` of the first one that is not
   * stored with the same body, or -1 when all match.
   */
  async findFirstMismatch(rows: EventRows): Promise<number> {
    if (rows.seqs.length === 0) return -1;
    const { rows: found } = await this.retrying(() => findFirstMismatchSql(rows).execute(this.db));
    return found[0] === undefined ? -1 : found[0].ordinal - 1;
  }

  /**
   * The seq of the session's last event; -1 when it has none. Session ids are checked as
   * `append` checks them: the driver would send a lone surrogate as U+FFFD and answer for
   * another session. With `lock` (inside
   * {@link transaction}), other writers of the session wait until this transaction ends.
   */
  async lastSeq(sessionId: string, options: { lock?: boolean } = {}): Promise<number> {
    checkSessionId(sessionId);
    let query = this.db.selectFrom('sessions').select('last_seq').where('session_id', '=', sessionId);
    if (options.lock) query = query.forUpdate();
    const head = await this.retrying(() => query.executeTakeFirst());
    return head === undefined ? -1 : exactInteger(head.last_seq);
  }

  /** The last seq of each of these sessions that has events. */
  async lastSeqs(sessionIds: readonly string[]): Promise<Map<string, number>> {
    if (sessionIds.length === 0) return new Map();
    for (const sessionId of sessionIds) checkSessionId(sessionId);
    const query = this.db
      .selectFrom('sessions')
      .select(['session_id', 'last_seq'])
      .where('session_id', '=', (eb) => eb.fn.any(eb.val([...sessionIds])));
    const rows = await this.retrying(() => query.execute());
    return new Map(rows.map((row) => [row.session_id, exactInteger(row.last_seq)]));
  }

  /**
   * Streams a session's log in seq order, a page per round trip, with exact values. Appends made
   * while reading are included up to where the reader has got. A stored event that is no event
   * (written around the store) is a `CorruptEventError` naming its session and seq.
   */
  async *readSession(sessionId: string, options: ReadSessionOptions = {}): AsyncGenerator<StoredEvent> {
    checkSessionId(sessionId);
    yield* readSession(this.db, sessionId, { ...options, retry: (work) => this.retrying(work) });
  }

  /** {@link readSession} giving each event as its JSON text, unparsed. */
  async *readSessionText(sessionId: string, options: ReadSessionTextOptions = {}): AsyncGenerator<StoredEventText> {
    checkSessionId(sessionId);
    yield* readSessionText(this.db, sessionId, { ...options, retry: (work) => this.retrying(work) });
  }

  /** Runs `work` with a store bound to one transaction: all of it is stored, or none. */
  transaction<T>(work: (store: EventStore) => Promise<T>): Promise<T> {
    if (this.db.isTransaction || poolOf(this.db) === undefined) return this.inTransaction((trx) => work(EventStore.onTransaction(trx, this.copyClient)));
    return withPinnedConnection(this.db, ({ client, db }) => db.transaction().execute((trx) => work(EventStore.onTransaction(trx, client))));
  }

  /** A store on a transaction, able to `COPY` when it knows the connection under it. */
  private static onTransaction(trx: Kysely<DB>, client: pg.PoolClient | undefined): EventStore {
    const store = new EventStore(trx);
    store.copyClient = client;
    return store;
  }

  /** `work` in a transaction: a new one, or the one this store is already bound to. */
  private inTransaction<T>(work: (db: Kysely<DB>) => Promise<T>): Promise<T> {
    return this.db.isTransaction ? work(this.db) : this.db.transaction().execute(work);
  }
}

/** Each session's first and last seq among the rows. */
function sessionSpans(rows: EventRows): SessionSpans {
  const spans = new Map<string, { first: number; last: number }>();
  rows.sessionIds.forEach((sessionId, index) => {
    const seq = rows.seqs[index]!;
    const span = spans.get(sessionId);
    if (span === undefined) spans.set(sessionId, { first: seq, last: seq });
    else span.last = Math.max(span.last, seq);
  });
  const result: SessionSpans = { sessionIds: [], firstSeqs: [], lastSeqs: [] };
  for (const [sessionId, span] of spans) {
    result.sessionIds.push(sessionId);
    result.firstSeqs.push(span.first);
    result.lastSeqs.push(span.last);
  }
  return result;
}

/** `count` items encoded a slice at a time, lazily. */
function* slices<T>(count: number, size: number, encode: (from: number, to: number) => T[]): Generator<T[]> {
  for (let from = 0; from < count; from += size) yield encode(from, Math.min(count, from + size));
}
