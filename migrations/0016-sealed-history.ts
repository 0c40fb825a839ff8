import { type Kysely, sql } from 'kysely';
import { storeIsDistributed } from '../src/db/distributed-store.js';

/**
 * The check that keeps a seq stored once when history is sealed (`os-audit seal`). A sealed log
 * is partitioned by transaction, and a unique index holds only within a partition. So a seq
 * already stored in a sealed partition is refused by this statement trigger on the parent,
 * which the seal creates (`session_events_sealed_unique`). Each session of the statement is
 * looked up once, by the (session_id, seq) index of each partition. Nothing uses it until a
 * store is sealed; a store distributed by Citus is never sealed.
 *
 * Once the extension is loaded, the seal also turns `citus_columnar`'s own scan off for the
 * log's functions that look events up (`EVENT_LOOKUPS` in src/store/seal-event-log.ts). This
 * one and the contiguity check (0015) are among them. So they look sealed events up by index:
 * a later migration that defines one of them again must keep that.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (await storeIsDistributed(db)) return;
  await sql`
    CREATE FUNCTION os_audit_refuse_sealed_duplicates() RETURNS trigger
    LANGUAGE plpgsql
    SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
    AS $$
    DECLARE
      bad record;
    BEGIN
      SELECT a.session_id, stored.seq INTO bad
      FROM (SELECT session_id, min(seq) AS first_seq, max(seq) AS last_seq, min(position) AS first_position
            FROM appended GROUP BY session_id) AS a
      CROSS JOIN LATERAL (
        SELECT e.seq FROM session_events AS e
        WHERE e.session_id = a.session_id AND e.seq BETWEEN a.first_seq AND a.last_seq AND e.position < a.first_position
        ORDER BY e.seq LIMIT 1) AS stored
      ORDER BY a.session_id
      LIMIT 1;
      IF bad.session_id IS NOT NULL THEN
        RAISE EXCEPTION 'session %: seq % is already stored', to_json(bad.session_id), bad.seq
          USING ERRCODE = 'unique_violation', CONSTRAINT = 'session_events_sealed_unique', TABLE = 'session_events';
      END IF;
      RETURN NULL;
    END
    $$`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (await storeIsDistributed(db)) return;
  await sql`DROP FUNCTION os_audit_refuse_sealed_duplicates()`.execute(db);
}
