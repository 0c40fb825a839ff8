import { type Kysely, sql } from 'kysely';

/**
 * On a Citus coordinator (a database where the `citus` extension is installed), the store is
 * distributed by `session_id`. `sessions`, `session_events` and the projector's per-session
 * bookkeeping are hash-distributed and colocated. That bookkeeping is
 * `projection_blocked_sessions`, `projection_errors`, and `projection_work` (the sessions a batch
 * folds). So a session's head, its events and what the projections keep of it live in one shard
 * group on one worker. Each projection's tables join them when the projection is registered
 * (`registerProjections`).
 * On a plain PostgreSQL database this migration does nothing: the schema stays as it was.
 *
 * What Citus refuses in the single-node schema gets an equivalent:
 * - Keys without the distribution column: `session_events` is keyed by (session_id, position)
 *   (`position` stays an identity, unique by its sequence), `projection_errors` by
 *   (projection, session_id, position).
 * - Triggers: they fire on each shard, on its worker. The append-only refusals and the head
 *   guards only look at their own row or statement, so they stay as they are. The contiguity
 *   checks (0009, 0011) read the session's head and stored log. On a worker these are the
 *   colocated shards of `sessions` and `session_events`. The checks' functions find them by the
 *   shard they fire on (`os_audit_colocated_shard`), so that each check runs where the data is.
 * - The NOTIFY wake-up would reach only a worker: os-audit's writers notify on the coordinator
 *   instead (see `EventStore`), and the projector also polls.
 * - Views read the shards on the workers as the user who queries them, not as their owner. So
 *   the reader role gets the columns its views show of the log (never `payload`), of the heads
 *   and of the stopped and set-aside events. The projector role gets `projection_work`.
 * - Citus locks a whole shard for a multi-shard UPDATE against concurrent writes into it (its
 *   "commutativity" rules, made for statement replication). Two imports moving the heads of
 *   their own sessions then deadlock across the workers. Here every write of os-audit goes to
 *   rows of its own: a session's head under its row lock, a projection's own work rows. Shards
 *   are not replicated by statement either. So the database treats modifications as commutative
 *   (`citus.all_modifications_commutative`) and takes row locks only.
 * - The horizon index (transaction id, position) is dropped: the projector on Citus finds new
 *   events by each session's seq, not by transaction ids (see docs/scale-out.md). So does the
 *   backlog of `os_projection_lag`: the events of each session past the projection's heads
 *   (`projection_checkpoints.session_heads`, set by `registerProjections`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const { rows } = await sql<{ citus: boolean }>`SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus') AS citus`.execute(db);
  if (!rows[0]!.citus) return;

  await sql`
    CREATE TABLE projection_work (
      projection text NOT NULL,
      session_id text NOT NULL,
      prev_seq bigint NOT NULL,
      target_seq bigint NOT NULL,
      PRIMARY KEY (projection, session_id)
    )`.execute(db);
  await sql`ALTER TABLE session_events DROP CONSTRAINT session_events_pkey`.execute(db);
  await sql`ALTER TABLE session_events ADD CONSTRAINT session_events_pkey PRIMARY KEY (session_id, position)`.execute(db);
  await sql`DROP INDEX session_events_transaction_position_idx`.execute(db);
  await sql`ALTER TABLE projection_errors DROP CONSTRAINT projection_errors_pkey`.execute(db);
  await sql`ALTER TABLE projection_errors ADD CONSTRAINT projection_errors_pkey PRIMARY KEY (projection, session_id, position)`.execute(db);
  await sql`DROP TRIGGER session_events_notify_appended ON session_events`.execute(db);
  await sql`ALTER TABLE projection_checkpoints ADD COLUMN session_heads text`.execute(db);
  await sql`
    CREATE FUNCTION os_audit_session_backlog(projection_name text)
    RETURNS TABLE (lag_events bigint, oldest timestamptz)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    DECLARE
      heads text := (SELECT session_heads FROM projection_checkpoints WHERE projection = projection_name);
    BEGIN
      IF heads IS NULL THEN
        RETURN QUERY SELECT 0::bigint, NULL::timestamptz;
        RETURN;
      END IF;
      RETURN QUERY EXECUTE format($query$
        SELECT coalesce(sum(s.last_seq - coalesce(h.last_seq, -1)), 0)::bigint, min(e.recorded_at)
        FROM sessions AS s
        LEFT JOIN (SELECT session_id, max(last_seq) AS last_seq FROM %I GROUP BY session_id) AS h ON h.session_id = s.session_id
        LEFT JOIN projection_blocked_sessions AS b ON b.session_id = s.session_id AND b.projection = $1
        JOIN session_events AS e ON e.session_id = s.session_id AND e.seq = coalesce(h.last_seq, -1) + 1
        WHERE s.last_seq > coalesce(h.last_seq, -1) AND b.session_id IS NULL
      $query$, heads) USING projection_name;
    END
    $$`.execute(db);
  await sql`
    CREATE OR REPLACE VIEW os_projection_lag AS
    SELECT c.projection,
      c.position AS checkpoint_position,
      c.events_applied,
      backlog.lag_events,
      CASE WHEN backlog.lag_events = 0 THEN 0
           ELSE greatest(0, extract(epoch FROM now() - backlog.oldest)::float8) END AS lag_seconds,
      l.owner AS leader,
      coalesce(l.expires_at > clock_timestamp(), false) AS leader_live,
      c.updated_at
    FROM projection_checkpoints c
    LEFT JOIN projection_leases l ON l.projection = c.projection
    CROSS JOIN LATERAL os_audit_session_backlog(c.projection) backlog`.execute(db);

  // The table's name in the refusal, not its shard's.
  await sql`
    CREATE OR REPLACE FUNCTION os_audit_refuse_history_change() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION '% on %: os-audit keeps history append-only', TG_OP, regexp_replace(TG_TABLE_NAME, '_\\d+$', '')
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'events are never changed or removed; append a new event instead';
    END
    $$`.execute(db);
  await sql`
    CREATE FUNCTION os_audit_colocated_shard(shard regclass, logical regclass) RETURNS regclass
    LANGUAGE sql STABLE AS $$
      SELECT shard_name(logical, colocated.shardid)::regclass
      FROM pg_dist_shard AS own
      JOIN pg_dist_shard AS colocated ON colocated.logicalrelid = logical AND colocated.shardminvalue = own.shardminvalue
      WHERE own.shardid = substring(shard::text FROM '_(\\d+)$')::bigint
    $$`.execute(db);
  await sql`
    CREATE OR REPLACE FUNCTION os_audit_check_appended_events() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
      bad record;
    BEGIN
      EXECUTE format($query$
        SELECT a.session_id, a.first_seq, a.last_seq, a.events, h.last_seq AS head,
               (SELECT min(seq) FROM appended AS n WHERE n.session_id = a.session_id AND n.seq > a.first_seq
                  AND NOT EXISTS (SELECT FROM appended AS p WHERE p.session_id = n.session_id AND p.seq = n.seq - 1)) AS after_hole,
               a.first_seq > 0 AND NOT EXISTS (SELECT FROM %1$s AS e WHERE e.session_id = a.session_id AND e.seq = a.first_seq - 1) AS detached
        FROM (SELECT session_id, min(seq) AS first_seq, max(seq) AS last_seq, count(*) AS events
              FROM appended GROUP BY session_id) AS a
        LEFT JOIN %2$s AS h ON h.session_id = a.session_id
        WHERE a.events <> a.last_seq - a.first_seq + 1
           OR (a.first_seq > 0 AND NOT EXISTS (
                 SELECT FROM %1$s AS e WHERE e.session_id = a.session_id AND e.seq = a.first_seq - 1))
           OR h.last_seq IS NULL OR a.last_seq > h.last_seq
        ORDER BY a.session_id
        LIMIT 1
      $query$, TG_RELID::regclass, os_audit_colocated_shard(TG_RELID, 'sessions')) INTO bad;
      IF bad.session_id IS NULL THEN
        RETURN NULL;
      END IF;
      IF bad.events <> bad.last_seq - bad.first_seq + 1 THEN
        RAISE EXCEPTION 'session %: seq % would leave a hole in its log: seq % is not stored', to_json(bad.session_id),
          bad.after_hole,
          (SELECT min(seq) + 1 FROM appended AS n WHERE n.session_id = bad.session_id
             AND NOT EXISTS (SELECT FROM appended AS p WHERE p.session_id = n.session_id AND p.seq = n.seq + 1))
          USING ERRCODE = 'check_violation', CONSTRAINT = 'session_events_contiguous', TABLE = 'session_events',
                HINT = 'a session''s log holds seqs 0, 1, 2, ... without a hole';
      ELSIF bad.detached THEN
        RAISE EXCEPTION 'session %: seq % would leave a hole in its log: seq % is not stored', to_json(bad.session_id),
          bad.first_seq, bad.first_seq - 1
          USING ERRCODE = 'check_violation', CONSTRAINT = 'session_events_contiguous', TABLE = 'session_events',
                HINT = 'a session''s log holds seqs 0, 1, 2, ... without a hole';
      ELSE
        RAISE EXCEPTION 'session %: seq % is past the session''s head (%)', to_json(bad.session_id), bad.last_seq,
          coalesce('last_seq ' || bad.head, 'no row in sessions')
          USING ERRCODE = 'check_violation', CONSTRAINT = 'session_events_contiguous', TABLE = 'session_events',
                HINT = 'move the head (sessions.last_seq) to the last event in the same statement or transaction';
      END IF;
    END
    $$`.execute(db);
  await sql`
    CREATE OR REPLACE FUNCTION os_audit_check_session_head() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
      head bigint;
      stored bigint;
    BEGIN
      EXECUTE format('SELECT s.last_seq, (SELECT max(e.seq) FROM %s AS e WHERE e.session_id = s.session_id) FROM %s AS s WHERE s.session_id = $1',
                     os_audit_colocated_shard(TG_RELID, 'session_events'), TG_RELID::regclass)
      INTO head, stored USING NEW.session_id;
      IF stored IS DISTINCT FROM head THEN
        RAISE EXCEPTION 'session %: its head is at seq % but %', to_json(NEW.session_id), head,
          coalesce('its log ends at seq ' || stored, 'it has no event')
          USING ERRCODE = 'check_violation', CONSTRAINT = 'sessions_head_at_last_event', TABLE = 'sessions',
                HINT = 'a head moves only with its events: store seqs up to last_seq in the same transaction';
      END IF;
      RETURN NULL;
    END
    $$`.execute(db);

  await sql`GRANT SELECT, INSERT, UPDATE, DELETE ON projection_work TO os_audit_projector`.execute(db);
  await sql`
    DO $$ BEGIN
      EXECUTE format('ALTER DATABASE %I SET citus.all_modifications_commutative = on', current_database());
    END $$`.execute(db);
  await sql`GRANT SELECT (session_id, seq, kind, turn, recorded_at) ON session_events TO os_audit_reader`.execute(db);
  await sql`GRANT SELECT ON sessions, projection_blocked_sessions, projection_errors TO os_audit_reader`.execute(db);

  // Triggers ride along to the shards (Citus calls triggers on distributed tables "unsafe":
  // ours read only their own shard group, see above).
  await sql`SET LOCAL citus.enable_unsafe_triggers = on`.execute(db);
  await sql`SELECT create_distributed_table('sessions', 'session_id')`.execute(db);
  for (const table of ['session_events', 'projection_blocked_sessions', 'projection_errors', 'projection_work']) {
    await sql`SELECT create_distributed_table(${table}, 'session_id', colocate_with => 'sessions')`.execute(db);
  }
}

/** A distributed database stays distributed: undistributing is `undistribute_table`, by hand. */
export async function down(): Promise<void> {}
