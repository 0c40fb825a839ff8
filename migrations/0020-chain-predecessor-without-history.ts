import { type Kysely, sql } from 'kysely';
import { storeIsDistributed } from '../src/db/distributed-store.js';

/**
 * The chain's row trigger (0017) found each event's predecessor by (session, seq) in the whole
 * log. On a sealed store that look-up also searched every columnar partition, for every event
 * stored: appends of 100 events by 8 writers held 1,086 events/s, and a commit took 100 ms to
 * show in a snapshot (the benchmark's live figures, after its seal).
 *
 * Now the predecessor is looked for among the events of the inserting transaction only, which
 * are all in the partition that takes appends (the log is partitioned by transaction); the
 * first event a transaction stores in a session follows the session's last stored event, whose
 * hash is the head's (`sessions.head_hash`, checked whenever it moves and at the commit). An
 * event that does not continue its session so is refused at the statement's end anyway
 * (`session_events_contiguous`). On Citus, whose store is never sealed, the look-up stays 0017's.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (await storeIsDistributed(db)) return;
  await defineChainEvent(db, {
    predecessor: `SELECT e.hash INTO previous FROM session_events AS e
          WHERE e.session_id = NEW.session_id AND e.seq = NEW.seq - 1 AND e.transaction_id = NEW.transaction_id;
        IF NOT FOUND THEN
          SELECT s.head_hash INTO previous FROM sessions AS s WHERE s.session_id = NEW.session_id;
        END IF;`,
  });
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (await storeIsDistributed(db)) return;
  await defineChainEvent(db, { predecessor: `SELECT e.hash INTO previous FROM session_events AS e WHERE e.session_id = NEW.session_id AND e.seq = NEW.seq - 1;` });
}

/** 0017's row trigger function on one server, its predecessor's hash found by `predecessor`. */
async function defineChainEvent(db: Kysely<unknown>, { predecessor }: { predecessor: string }): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION os_audit_chain_event() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
      written_turn bigint := os_audit_turn_as_written(NEW.payload);
      problem text;
      previous bytea;
    BEGIN
      IF NEW.turn IS NULL THEN
        NEW.turn := written_turn;
      ELSIF NEW.turn IS DISTINCT FROM written_turn THEN
        RAISE EXCEPTION 'session %: seq %: column turn (%) is not the event''s turn (%)', to_json(NEW.session_id), NEW.seq,
          coalesce(NEW.turn::text, 'null'), coalesce(written_turn::text, 'none: no u32 integer turn')
          USING ERRCODE = 'check_violation', COLUMN = 'turn', TABLE = 'session_events', CONSTRAINT = 'session_events_turn_as_written';
      END IF;
      IF NEW.payload_text IS NOT NULL THEN
        problem := os_audit_exact_text_problem(NEW.payload, NEW.payload_text);
        IF problem IS NOT NULL THEN
          RAISE EXCEPTION 'session %: seq %: column payload_text %', to_json(NEW.session_id), NEW.seq, problem
            USING ERRCODE = 'check_violation', COLUMN = 'payload_text', TABLE = 'session_events', CONSTRAINT = 'session_events_exact_text';
        END IF;
      END IF;
      IF NEW.seq = 0 THEN
        previous := os_audit_chain_start(NEW.session_id);
      ELSE
        ${sql.raw(predecessor)}
      END IF;
      NEW.hash := os_audit_event_hash(previous, NEW.seq, coalesce(NEW.payload_text, NEW.payload::text));
      RETURN NEW;
    END
    $$`.execute(db);
}
