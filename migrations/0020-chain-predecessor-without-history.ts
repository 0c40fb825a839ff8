import type { Kysely } from 'kysely';
import { storeIsDistributed } from '../src/db/distributed-store.js';
import { defineChainEvent, PREDECESSOR } from './0017-event-chain.js';

/**
 * The chain's row trigger (0017) found each event's predecessor by (session, seq) in the whole
 * log. On a sealed store that look-up also searched every columnar partition, for every event
 * stored. In the benchmark's live figures after its seal, appends of 100 events by 8 writers
 * held 1,086 events/s, and a commit took 100 ms to show in a snapshot.
 *
 * Now the predecessor is looked for among the events of the inserting transaction only. The log
 * is partitioned by transaction, so these are all in the partition that takes appends. The first
 * event a transaction stores in a session follows the session's last stored event. That event's
 * hash is the head's (`sessions.head_hash`, checked whenever it moves and at the commit). An
 * event that does not continue its session so is refused at the statement's end anyway
 * (`session_events_contiguous`). On Citus, whose store is never sealed, the look-up stays 0017's.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (await storeIsDistributed(db)) return;
  await defineChainEvent(
    db,
    `SELECT e.hash INTO previous FROM session_events AS e
          WHERE e.session_id = NEW.session_id AND e.seq = NEW.seq - 1 AND e.transaction_id = NEW.transaction_id;
        IF NOT FOUND THEN
          SELECT s.head_hash INTO previous FROM sessions AS s WHERE s.session_id = NEW.session_id;
        END IF;`,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (await storeIsDistributed(db)) return;
  await defineChainEvent(db, PREDECESSOR);
}
