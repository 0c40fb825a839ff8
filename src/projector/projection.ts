import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { DB } from '../db/schema.js';

/**
 * A batch of events as a projection folds it: two relations, in SQL.
 */
export interface EventBatchSql {
  /**
   * The events, or at least those of the kinds in {@link Projection.readsPayloadOf}:
   * `session_id`, `seq`, `kind`, `recorded_at`, `payload` (set only for those kinds) and
   * `problem` (why the projection cannot read the event).
   */
  events: RawBuilder<unknown>;
  /**
   * Each session of the batch once: `session_id`, `last_seq` (its highest seq) and the
   * projection's {@link Projection.sessionAggregates}.
   */
  sessions: RawBuilder<unknown>;
}

/**
 * A relation of events as a whole batch: the events, and their sessions grouped from them with
 * `sessionAggregates` (a projection's {@link Projection.sessionAggregates}).
 *
 * @example
 * ```ts
 * const batch = eventBatchOf(sql`os_audit_batch`, projection.sessionAggregates);
 * await sql`WITH ${projection.foldSql(batch)} SELECT`.execute(trx);
 * ```
 */
export function eventBatchOf(events: RawBuilder<unknown>, sessionAggregates: RawBuilder<unknown>): EventBatchSql {
  return {
    events,
    sessions: sql`(SELECT session_id, max(seq) AS last_seq, ${sessionAggregates} FROM ${events} AS e GROUP BY session_id)`,
  };
}

/**
 * A projection the projector keeps up to date: SQL tables folded from the event log.
 *
 * The projector reads new events in batches, each session's events contiguous and continuing
 * where the projection left it; the projection folds a batch into its own tables.
 */
export interface Projection {
  /** The name of its checkpoint, lease and errors. */
  readonly name: string;
  /** Its table with one row per session, `session_id` and `last_seq`: how far each is folded. */
  readonly sessionHeads: 'os_snapshots';
  /** The kinds whose body the projection reads; other events come without `payload`. */
  readonly readsPayloadOf: readonly string[];
  /**
   * The SQL function `(kind text, payload jsonb) → text` that says why the projection cannot
   * read an event (a poison event), or NULL when it can.
   */
  readonly problemFunction: 'os_snapshot_event_problem';
  /**
   * What it keeps per session of a batch, as aggregates over the batch's events (`kind`,
   * `seq`, …) with their names: the projector computes them in the pass over the batch that
   * checks it, and hands them to {@link foldSql} in `sessions`.
   *
   * @example
   * ```ts
   * sessionAggregates: sql`count(*) FILTER (WHERE kind = 'page_out') AS page_out_count`
   * ```
   */
  readonly sessionAggregates: RawBuilder<unknown>;
  /**
   * Its fold, as common table expressions (`name AS (…), …`, writing with `INSERT … ON
   * CONFLICT`) over a batch: the events whose `problem` is NULL are folded, every session
   * moves to its `last_seq`. The projector puts them in one statement after its own
   * expressions (named `batch_…`), over its batch table or a window of the log read straight
   * from `session_events`. They take no parameters: the projector prepares the fold of its
   * batch table once per connection, for live batches, where planning would cost more than
   * running it.
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
