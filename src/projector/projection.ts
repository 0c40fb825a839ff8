import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { type EventReads, readFieldsSql, readKindsSql } from './event-reads.js';

/**
 * A batch of events as a projection folds it: two relations, in SQL.
 */
export interface EventBatchSql {
  /**
   * The events to fold of the kinds in {@link Projection.reads}, each readable: `session_id`,
   * `seq`, `kind`, `recorded_at`, and one typed column per field the projection reads (see
   * `readFieldsSql`).
   */
  events: RawBuilder<unknown>;
  /**
   * Each session the batch moves once: `session_id`, `last_seq` (the last seq folded now) and
   * one column per {@link Projection.counters} entry, the batch's count of that kind.
   */
  sessions: RawBuilder<unknown>;
}

/**
 * A projection the projector keeps up to date: SQL tables folded from the event log.
 *
 * The projector reads new events in batches, each session's events in seq order continuing
 * where the projection left it; it reads the fields the projection names, stops a session at
 * an event the projection cannot read, at a hole in its log, or where the projection's SQL
 * fails on its events, and hands the projection the rest to fold into its own tables.
 */
export interface Projection {
  /** The name of its checkpoint, lease, blocked sessions and set-aside events. */
  readonly name: string;
  /** Its table with one row per session, `session_id` and `last_seq`: how far each is folded. */
  readonly sessionHeads: string;
  /** The kinds whose fields it reads, and how (see `defineEventReads`). */
  readonly reads: EventReads;
  /** Its counters: column name → the kind it counts, whatever the event's fields. */
  readonly counters: Readonly<Record<string, string>>;
  /**
   * Its fold, as common table expressions (`name AS (…), …`, writing with `INSERT … ON
   * CONFLICT`) over a batch: every session moves to its `last_seq`. The projector puts them in
   * its own statement after its expressions (named `batch_…`). They take no parameters.
   *
   * @example
   * ```ts
   * foldSql: ({ sessions }) => sql`heads AS (INSERT INTO my_heads SELECT session_id, last_seq FROM ${sessions} AS s
   *   ON CONFLICT (session_id) DO UPDATE SET last_seq = excluded.last_seq RETURNING 1)`
   * ```
   */
  foldSql(batch: EventBatchSql): RawBuilder<unknown>;
  /** Removes all the projection wrote (a rebuild starts from there). */
  clear(db: Kysely<DB>): Promise<void>;
}

/**
 * A relation of stored events (`session_id`, `seq`, `kind`, `recorded_at`, `payload`, `payload_text`) as a
 * whole batch for `projection`: each event's fields read (an unreadable one left out, without
 * stopping its session), its sessions grouped from it. The set-based projection of everything
 * (the benchmark's limit) folds the whole log so.
 *
 * @example
 * ```ts
 * const batch = eventBatchOf(projection, sql`session_events`);
 * await sql`WITH ${projection.foldSql(batch)} SELECT`.execute(trx);
 * ```
 */
export function eventBatchOf(projection: Projection, events: RawBuilder<unknown>): EventBatchSql {
  return {
    events: sql`(SELECT e.session_id, e.seq, e.kind, e.recorded_at, r.* FROM ${events} AS e
      CROSS JOIN LATERAL ${readFieldsSql(projection.reads, { kind: sql`e.kind`, payload: sql`e.payload`, standIn: sql`e.payload_text IS NOT NULL` })} AS r
      WHERE e.kind IN (${readKindsSql(projection.reads)}) AND r.problem IS NULL)`,
    sessions: sql`(SELECT session_id, max(seq) AS last_seq, ${countersSql(projection)} FROM ${events} AS e GROUP BY session_id)`,
  };
}

/** The projection's counters as aggregates over events with a `kind` column (of those `where` holds for). */
export function countersSql(projection: Projection, where: RawBuilder<boolean> = sql`true`): RawBuilder<unknown> {
  return sql.join(
    Object.entries(projection.counters).map(
      ([column, kind]) => sql`count(*) FILTER (WHERE kind = ${sql.lit(kind)} AND ${where}) AS ${sql.id(column)}`,
    ),
  );
}

/**
 * The whole log folded into the projection's empty tables in one statement: the set-based
 * projection of everything, the limit the benchmark compares the projector with.
 *
 * @example
 * ```ts
 * await db.transaction().execute((trx) => foldWholeLogSql(osSnapshotProjection).execute(trx));
 * ```
 */
export function foldWholeLogSql(projection: Projection): RawBuilder<unknown> {
  return sql`WITH ${projection.foldSql(eventBatchOf(projection, sql`session_events`))} SELECT`;
}
