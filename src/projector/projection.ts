import type { Kysely, RawBuilder } from 'kysely';
import type { DB } from '../db/schema.js';

/**
 * A projection the projector keeps up to date: SQL tables folded from the event log.
 *
 * The projector reads new events in batches into a temporary table `os_audit_batch`
 * (columns `position`, `session_id`, `seq`, `kind`, `payload` — set only for the kinds in
 * {@link readsPayloadOf} — `recorded_at` and `problem`), each session's events contiguous and
 * continuing where the projection left it; the projection folds that table into its own.
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
   * The statement that folds the rows of `os_audit_batch` whose `problem` is NULL into the
   * projection's tables. It takes no parameters: the projector prepares it once per connection
   * for small batches, where planning it would cost more than running it.
   */
  foldBatchSql(): RawBuilder<unknown>;
  /** Removes all the projection wrote (a rebuild starts from there). */
  clear(db: Kysely<DB>): Promise<void>;
}
