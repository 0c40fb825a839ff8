import { type Kysely, sql } from 'kysely';
import { storeIsDistributed } from '../src/db/distributed-store.js';

/**
 * A hash chain per session over the bytes as stored, and no row whose columns disagree with
 * its event. The chain is defined in docs/integrity.md:
 *
 *   start(session) = SHA-256(UTF-8 of the session id)
 *   hash(event)    = SHA-256(previous hash || seq as 8 bytes big-endian || UTF-8 of the stored text)
 *
 * - `session_events.hash`: set by the database at every INSERT or COPY (`session_events_chain`,
 *   a row trigger that fires for every role, also in replica mode); whatever a writer sends is
 *   replaced. A row trigger sees the rows its statement stored before, so a statement of many
 *   events of one session chains them in seq order by index look-ups.
 * - `sessions.head_hash`: the hash of the session's last event, set after each statement
 *   (`session_events_set_head_hashes`, as the schema's owner: writers hold no grant on it) and
 *   checked whenever it moves (`sessions_head_hash_of_last_event`) and at the commit with the
 *   head (`sessions_head_at_last_event`).
 * - The same trigger fills a missing `turn` from the payload, and refuses one other than the
 *   payload's own and a `payload_text` that is not the event the readable `payload` stands in
 *   for, naming the column.
 * - Events stored before have no hash until the chain is backfilled (`backfillEventChain`),
 *   after the migrations, in batches of their own transactions. An event appended to a session
 *   not yet backfilled gets none either; the backfill chains it with the rest.
 * - An UPDATE of an event may only fill its missing hash, in the backfill; everything else
 *   stays refused.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const distributed = await storeIsDistributed(db);
  if (distributed) {
    // Functions are created on every worker over connections of their own, which Citus allows
    // after DDL on the shards only when the transaction runs that DDL one shard at a time.
    await sql`SET LOCAL citus.multi_shard_modify_mode TO 'sequential'`.execute(db);
    await sql`SET LOCAL citus.enable_unsafe_triggers = on`.execute(db);
  }
  await sql`ALTER TABLE session_events ADD COLUMN hash bytea`.execute(db);
  await sql`ALTER TABLE sessions ADD COLUMN head_hash bytea`.execute(db);

  await sql`
    CREATE FUNCTION os_audit_chain_start(session_id text) RETURNS bytea
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    AS $$ SELECT sha256(convert_to(session_id, 'UTF8')) $$`.execute(db);
  await sql`
    CREATE FUNCTION os_audit_event_hash(previous bytea, seq bigint, stored_text text) RETURNS bytea
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT sha256(previous || int8send(seq) || convert_to(stored_text, 'UTF8')) $$`.execute(db);
  await defineTurnAsWritten(db);
  // Recursion depth follows the event's nesting, which writers keep within MAX_JSON_DEPTH.
  await sql`
    CREATE FUNCTION os_audit_unwrapped_stand_in(value jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
      SELECT CASE jsonb_typeof(value)
        WHEN 'object' THEN
          CASE WHEN value ? 'os_audit_unstorable_string' AND jsonb_typeof(value -> 'os_audit_unstorable_string') = 'string'
                    AND (SELECT count(*) FROM jsonb_object_keys(value)) = 1
               THEN value -> 'os_audit_unstorable_string'
               ELSE (SELECT coalesce(jsonb_object_agg(key, os_audit_unwrapped_stand_in(member)), '{}')
                     FROM jsonb_each(value) AS m(key, member)) END
        WHEN 'array' THEN
          (SELECT coalesce(jsonb_agg(os_audit_unwrapped_stand_in(item) ORDER BY n), '[]')
           FROM jsonb_array_elements(value) WITH ORDINALITY AS a(item, n))
        ELSE value END
    $$`.execute(db);
  // Escapes tokenized left to right, so that an escaped backslash is never read as the start of
  // one; a surrogate pair stays, a lone surrogate or U+0000 becomes U+FFFD as in the stand-in.
  await sql`
    CREATE FUNCTION os_audit_exact_text_problem(payload json, payload_text text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE AS $$
    DECLARE
      readable text;
    BEGIN
      BEGIN
        PERFORM payload_text::json;
      EXCEPTION WHEN others THEN
        RETURN 'is not JSON: ' || SQLERRM;
      END;
      SELECT string_agg(CASE WHEN token[1] ~ '^\\\\u(0000|[dD][89a-fA-F][0-9a-fA-F]{2})$' THEN '\\ufffd' ELSE token[1] END, '' ORDER BY n)
      INTO readable
      FROM regexp_matches(payload_text,
             '\\\\u[dD][89abAB][0-9a-fA-F]{2}\\\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\\\u[0-9a-fA-F]{4}|\\\\.|[^\\\\]+', 'g')
           WITH ORDINALITY AS t(token, n);
      IF readable = payload_text THEN
        RETURN 'holds no string PostgreSQL cannot read: it is kept only for an event whose payload is a stand-in';
      END IF;
      BEGIN
        IF readable::jsonb = os_audit_unwrapped_stand_in(payload::jsonb) THEN
          RETURN NULL;
        END IF;
      EXCEPTION WHEN others THEN
        RETURN 'cannot be compared with payload: ' || SQLERRM;
      END;
      RETURN 'is not the event that payload stands in for';
    END
    $$`.execute(db);

  // An UPDATE is refused as a statement, before any row is read (a sealed columnar partition
  // cannot even fetch one), unless the chain's backfill says it is running; its rows may then
  // only fill a missing hash.
  await sql`
    CREATE FUNCTION os_audit_refuse_update_but_backfill() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      IF current_setting('os_audit.backfilling_chain', true) = 'on' THEN
        RETURN NULL;
      END IF;
      RAISE EXCEPTION 'UPDATE on session_events: os-audit keeps history append-only'
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'events are never changed or removed; append a new event instead';
    END
    $$`.execute(db);
  await sql`
    CREATE FUNCTION os_audit_fill_hash_only() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
      filled bytea := NEW.hash;
    BEGIN
      IF OLD.hash IS NULL AND filled IS NOT NULL THEN
        NEW.hash := NULL;
        IF NEW::text = OLD::text THEN
          NEW.hash := filled;
          RETURN NEW;
        END IF;
      END IF;
      RAISE EXCEPTION 'UPDATE on session_events: session %: seq %: only a missing hash may be filled in', to_json(OLD.session_id), OLD.seq
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'events are never changed or removed; append a new event instead';
    END
    $$`.execute(db);
  await sql`DROP TRIGGER session_events_refuse_update_delete ON session_events`.execute(db);
  await sql`
    CREATE TRIGGER session_events_refuse_delete
      BEFORE DELETE ON session_events
      FOR EACH STATEMENT EXECUTE FUNCTION os_audit_refuse_history_change()`.execute(db);
  await sql`
    CREATE TRIGGER session_events_refuse_update
      BEFORE UPDATE ON session_events
      FOR EACH STATEMENT EXECUTE FUNCTION os_audit_refuse_update_but_backfill()`.execute(db);
  await sql`
    CREATE TRIGGER session_events_update_fills_hash_only
      BEFORE UPDATE ON session_events
      FOR EACH ROW EXECUTE FUNCTION os_audit_fill_hash_only()`.execute(db);

  await defineChainEvent(db, distributed ? DISTRIBUTED_PREDECESSOR : PREDECESSOR);
  await sql`
    CREATE TRIGGER session_events_chain
      BEFORE INSERT ON session_events
      FOR EACH ROW EXECUTE FUNCTION os_audit_chain_event()`.execute(db);

  // The last event of each session of the statement; on Citus, in the sessions shard colocated
  // with this one. Planned once per connection, pinned to index look-ups as 0015's check is.
  const headsUpdate = `UPDATE %s AS s SET head_hash = a.hash
    FROM (SELECT DISTINCT ON (session_id) session_id, hash FROM appended ORDER BY session_id, seq DESC) AS a
    WHERE s.session_id = a.session_id`;
  await sql`
    CREATE FUNCTION os_audit_chain_heads() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT
    SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
    BEGIN
      ${sql.raw(distributed ? `EXECUTE format(${quoteLiteral(headsUpdate)}, os_audit_colocated_shard(TG_RELID, 'sessions'));` : `${headsUpdate.replace('%s', 'sessions')};`)}
      RETURN NULL;
    END
    $$`.execute(db);
  // Named to fire after the statement's checks: AFTER triggers fire in name order, and the
  // contiguity's and the seal's (of seqs already sealed) come first. So a statement they refuse
  // is refused for its fault, not by the check of the head hash it would move.
  await sql`
    CREATE TRIGGER session_events_set_head_hashes
      AFTER INSERT ON session_events REFERENCING NEW TABLE AS appended
      FOR EACH STATEMENT EXECUTE FUNCTION os_audit_chain_heads()`.execute(db);
  // Whoever moves it (the statement trigger above, the backfill, the owner by hand), a head's
  // hash is its last stored event's: checked at once, as the events are stored first.
  const lastHash = distributed
    ? `EXECUTE format('SELECT hash FROM %s WHERE session_id = $1 ORDER BY seq DESC LIMIT 1', os_audit_colocated_shard(TG_RELID, 'session_events'))
         INTO last_hash USING NEW.session_id;`
    : `SELECT e.hash INTO last_hash FROM session_events AS e WHERE e.session_id = NEW.session_id ORDER BY e.seq DESC LIMIT 1;`;
  await sql`
    CREATE FUNCTION os_audit_check_head_hash() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
      last_hash bytea;
    BEGIN
      ${sql.raw(lastHash)}
      IF NEW.head_hash IS DISTINCT FROM last_hash THEN
        RAISE EXCEPTION 'session %: column head_hash is not the hash of its last stored event', to_json(NEW.session_id)
          USING ERRCODE = 'check_violation', COLUMN = 'head_hash', TABLE = 'sessions', CONSTRAINT = 'sessions_head_hash_of_last_event',
                HINT = 'the database sets head_hash when events are stored';
      END IF;
      RETURN NEW;
    END
    $$`.execute(db);
  await sql`
    CREATE TRIGGER sessions_head_hash_of_last_event
      BEFORE UPDATE OF head_hash ON sessions
      FOR EACH ROW WHEN (NEW.head_hash IS DISTINCT FROM OLD.head_hash) EXECUTE FUNCTION os_audit_check_head_hash()`.execute(db);
  await sql`ALTER TABLE sessions ENABLE ALWAYS TRIGGER sessions_head_hash_of_last_event`.execute(db);
  for (const trigger of ['session_events_refuse_delete', 'session_events_refuse_update', 'session_events_update_fills_hash_only', 'session_events_chain']) {
    await sql`ALTER TABLE session_events ENABLE ALWAYS TRIGGER ${sql.id(trigger)}`.execute(db);
  }

  await sql`
    CREATE FUNCTION os_audit_unchained_hashes(session_ids text[]) RETURNS TABLE (session_id text, seq bigint, hash bytea)
    LANGUAGE plpgsql AS $$
    DECLARE
      event record;
      chained_session text;
      previous bytea;
    BEGIN
      FOR event IN
        SELECT e.session_id, e.seq, e.hash, coalesce(e.payload_text, e.payload::text) AS stored_text
        FROM session_events AS e WHERE e.session_id = ANY(session_ids) ORDER BY e.session_id, e.seq
      LOOP
        IF event.session_id IS DISTINCT FROM chained_session THEN
          chained_session := event.session_id;
          previous := os_audit_chain_start(event.session_id);
        END IF;
        IF event.hash IS NOT NULL THEN
          previous := event.hash;
          CONTINUE;
        END IF;
        previous := os_audit_event_hash(previous, event.seq, event.stored_text);
        session_id := event.session_id;
        seq := event.seq;
        hash := previous;
        RETURN NEXT;
      END LOOP;
    END
    $$`.execute(db);
  // Whether every event stored before this migration is chained (backfillEventChain), and up
  // to which position events were stored without the row checks above, which verify makes.
  await sql`CREATE TABLE event_chain_backfill (completed_at timestamptz, unchecked_through_position bigint)`.execute(db);
  const { rows: stored } = await sql<{ position: string | null }>`SELECT max(position) AS position FROM session_events`.execute(db);
  const position = stored[0]!.position;
  await sql`INSERT INTO event_chain_backfill VALUES (${position === null ? sql`now()` : null}, ${position}::bigint)`.execute(db);
  await sql`GRANT SELECT ON event_chain_backfill TO os_audit_reader, os_audit_writer, os_audit_projector`.execute(db);

  await defineHeadCheck(db, distributed, { withHash: true });
  await sql`REVOKE ALL ON FUNCTION os_audit_chain_heads() FROM PUBLIC`.execute(db);
  if (distributed) await sql`GRANT SELECT (hash) ON session_events TO os_audit_reader`.execute(db);
}

/** The row trigger's look-up of an event's predecessor hash into `previous` (0020 replaces it on one server). */
export const PREDECESSOR = `SELECT e.hash INTO previous FROM session_events AS e WHERE e.session_id = NEW.session_id AND e.seq = NEW.seq - 1;`;
/** The same on a Citus shard, where the trigger fires: in that shard. */
const DISTRIBUTED_PREDECESSOR = `EXECUTE format('SELECT hash FROM %s WHERE session_id = $1 AND seq = $2', TG_RELID::regclass)
          INTO previous USING NEW.session_id, NEW.seq - 1;`;

/**
 * The row trigger's function: it fills and checks the turn, checks payload_text, and hashes
 * the event after the hash `predecessor` finds.
 */
export async function defineChainEvent(db: Kysely<unknown>, predecessor: string): Promise<void> {
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

/** The encoder's rule (u32OrNull in src/events/encode-event.ts): an integer literal in 0..2^32-1 (0019 reads it in one pass). */
export async function defineTurnAsWritten(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION os_audit_turn_as_written(payload json) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
      SELECT CASE WHEN json_typeof(t) = 'number' AND t::text ~ '^(0|[1-9][0-9]{0,9})$' AND t::text::bigint <= 4294967295
                  THEN t::text::bigint END
      FROM (SELECT payload -> 'turn' AS t) AS turn
    $$`.execute(db);
}

/**
 * 0009's (on Citus 0012's) check of the head at the commit; `withHash`, it also compares the
 * head's hash with its last event's.
 */
async function defineHeadCheck(db: Kysely<unknown>, distributed: boolean, { withHash }: { withHash: boolean }): Promise<void> {
  const hashes = withHash ? 's.head_hash, last.hash' : 'NULL::bytea, NULL::bytea';
  const lookup = distributed
    ? `EXECUTE format('SELECT s.last_seq, last.seq, ${hashes} FROM %s AS s
         LEFT JOIN LATERAL (SELECT e.* FROM %s AS e WHERE e.session_id = s.session_id ORDER BY e.seq DESC LIMIT 1) AS last ON true
         WHERE s.session_id = $1', TG_RELID::regclass, os_audit_colocated_shard(TG_RELID, 'session_events'))
       INTO head, stored, head_hash, stored_hash USING NEW.session_id;`
    : `SELECT s.last_seq, last.seq, ${hashes} INTO head, stored, head_hash, stored_hash
       FROM sessions AS s
       LEFT JOIN LATERAL (SELECT e.* FROM session_events AS e WHERE e.session_id = s.session_id ORDER BY e.seq DESC LIMIT 1) AS last ON true
       WHERE s.session_id = NEW.session_id;`;
  await sql`
    CREATE OR REPLACE FUNCTION os_audit_check_session_head() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
      head bigint;
      stored bigint;
      head_hash bytea;
      stored_hash bytea;
    BEGIN
      ${sql.raw(lookup)}
      IF stored IS DISTINCT FROM head THEN
        RAISE EXCEPTION 'session %: its head is at seq % but %', to_json(NEW.session_id), head,
          coalesce('its log ends at seq ' || stored, 'it has no event')
          USING ERRCODE = 'check_violation', CONSTRAINT = 'sessions_head_at_last_event', TABLE = 'sessions',
                HINT = 'a head moves only with its events: store seqs up to last_seq in the same transaction';
      ELSIF head_hash IS DISTINCT FROM stored_hash THEN
        RAISE EXCEPTION 'session %: column head_hash is not the hash of its last event (seq %)', to_json(NEW.session_id), stored
          USING ERRCODE = 'check_violation', COLUMN = 'head_hash', CONSTRAINT = 'sessions_head_at_last_event', TABLE = 'sessions',
                HINT = 'the database sets head_hash when events are stored';
      END IF;
      RETURN NULL;
    END
    $$`.execute(db);
}

function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** Back to 0016: the chain, its checks and its backfill's state go; history refuses every UPDATE again. */
export async function down(db: Kysely<unknown>): Promise<void> {
  const distributed = await storeIsDistributed(db);
  await sql`DROP TRIGGER sessions_head_hash_of_last_event ON sessions`.execute(db);
  await sql`DROP TRIGGER session_events_set_head_hashes ON session_events`.execute(db);
  await sql`DROP TRIGGER session_events_chain ON session_events`.execute(db);
  await sql`DROP TRIGGER session_events_update_fills_hash_only ON session_events`.execute(db);
  await sql`DROP TRIGGER session_events_refuse_update ON session_events`.execute(db);
  await sql`DROP TRIGGER session_events_refuse_delete ON session_events`.execute(db);
  await sql`
    CREATE TRIGGER session_events_refuse_update_delete
      BEFORE UPDATE OR DELETE ON session_events
      FOR EACH STATEMENT EXECUTE FUNCTION os_audit_refuse_history_change()`.execute(db);
  await sql`ALTER TABLE session_events ENABLE ALWAYS TRIGGER session_events_refuse_update_delete`.execute(db);
  await sql`DROP TABLE event_chain_backfill`.execute(db);
  for (const fn of [
    'os_audit_check_head_hash()',
    'os_audit_chain_heads()',
    'os_audit_chain_event()',
    'os_audit_fill_hash_only()',
    'os_audit_refuse_update_but_backfill()',
    'os_audit_unchained_hashes(text[])',
    'os_audit_exact_text_problem(json, text)',
    'os_audit_unwrapped_stand_in(jsonb)',
    'os_audit_turn_as_written(json)',
    'os_audit_event_hash(bytea, bigint, text)',
    'os_audit_chain_start(text)',
  ]) {
    await sql`DROP FUNCTION ${sql.raw(fn)}`.execute(db);
  }
  await sql`ALTER TABLE sessions DROP COLUMN head_hash`.execute(db);
  await sql`ALTER TABLE session_events DROP COLUMN hash`.execute(db);
  await defineHeadCheck(db, distributed, { withHash: false });
}
