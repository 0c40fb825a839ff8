import type { Kysely, RawBuilder } from 'kysely';
import type { DB } from '../db/schema.js';

/**
 * A projection the projector keeps up to date: SQL tables folded from the event log.
 *
 * The projector reads new events in batches (columns `session_id`, `seq`, `kind`,
 * `recorded_at`, `payload` — set only for the kinds in {@link readsPayloadOf} — and
 * `problem`), each session's events contiguous and continuing where the projection left it;
 * the projection folds a batch into its own tables.
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
   * Its fold, as common table expressions (`name AS (…), …`, writing with `INSERT … ON
   * CONFLICT`) over the relation `events`: the rows whose `problem` is NULL are folded, every
   * row moves its session's `last_seq`. The projector puts them in one statement after its own
   * expressions (named `batch_…`), reading either its batch table or a window of the log
   * straight from `session_events`. They take no parameters: the projector prepares the fold
   * of its batch table once per connection, for live batches, where planning would cost more
   * than running it.
   *
   * @example
   * ```ts
   * foldSql: (events) => sql`per_session AS (SELECT session_id, max(seq) AS last_seq FROM ${events} AS e GROUP BY session_id), …`
   * ```
   */
  foldSql(events: RawBuilder<unknown>): RawBuilder<unknown>;
  /** Removes all the projection wrote (a rebuild starts from there). */
  clear(db: Kysely<DB>): Promise<void>;
}
