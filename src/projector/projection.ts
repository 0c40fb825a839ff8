import type { Kysely } from 'kysely';
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
   * Folds the rows of `os_audit_batch` whose `problem` is NULL into the projection's tables;
   * `batch.events` is how many rows the table holds (small live batches and large catch-up
   * batches may be best run differently).
   */
  apply(db: Kysely<DB>, batch: { events: number }): Promise<void>;
  /** Removes all the projection wrote (a rebuild starts from there). */
  clear(db: Kysely<DB>): Promise<void>;
}
