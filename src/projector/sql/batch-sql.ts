import { type RawBuilder, sql } from 'kysely';
import { fieldNames, readFieldsSql, readKindsSql } from '../event-reads.js';
import { countersSql, foldExpressionsSql, type Projection } from '../projection.js';

/** The values a batch statement takes; the statement is the same for every batch of a projection. */
export interface BatchParameters {
  /** The lease this batch writes under: its owner and epoch (the fencing token). */
  owner: string;
  epoch: number;
  /** The lease is renewed for this long. */
  leaseTtlMs: number;
  /** The most events read from the log. */
  limit: number;
  /** Set unreadable events aside in `projection_errors` (and resume sessions stopped at one) instead of stopping their session. */
  skipInvalid: boolean;
}

/** What a batch did. */
export interface BatchOutcome {
  /** Events of the log the batch moved past (0: the checkpoint stays). */
  window_count: number;
  end_transaction_id: string | null;
  end_position: number | null;
  /** Events folded. */
  applied: number;
  /** Unreadable events set aside (`skipInvalid`). */
  skipped: number;
  /** Sessions this batch stopped, the first few: where and why. */
  stopped: StoppedSession[];
  stopped_count: number;
  /** Sessions stopped earlier that this batch took up again (`skipInvalid`). */
  resumed_count: number;
}

/**
 * A session a projection stopped: at an event it cannot read, at a seq missing from the log, or
 * where the projection's SQL failed on its events (a data error: a fault of the projection).
 *
 * @example
 * ```ts
 * const projector = new Projector(db, projection, {
 *   onEvent: (event) => event.type === 'sessions_stopped' && event.sessions.forEach((stop) => console.log(stop.session_id, stop.seq, stop.problem)),
 * });
 * ```
 */
export interface StoppedSession {
  session_id: string;
  seq: number;
  position: number | null;
  kind: string | null;
  reason: 'unreadable' | 'hole' | 'failed';
  problem: string;
}

/** Sessions stopped earlier that one batch takes up again, at most (`skipInvalid`). */
const RESUMED_PER_BATCH = 1000;
/** Stopped sessions a batch reports by name; all are in `projection_blocked_sessions`. */
const STOPPED_REPORTED = 10;

/**
 * One batch of a projection in one statement, exactly once. It renews the lease, reads the
 * events after the checkpoint, folds them and moves the checkpoint by compare-and-set. A lost
 * lease or a moved checkpoint fails the statement, and nothing of it is kept. A session stops
 * alone at a hole or an unreadable event. Why: docs/design/projector-batch.md.
 *
 * It takes the parameters of {@link BatchParameters}, in that order, so that it can be prepared
 * once per connection.
 */
export function batchSql(projection: Projection): RawBuilder<BatchOutcome> {
  const name = sql.lit(projection.name);
  const heads = sql.table(projection.sessionHeads);
  const readKinds = readKindsSql(projection.reads);
  const [owner, epoch, ttlMs, limit, skipInvalid] = [sql`$1::text`, sql`$2::bigint`, sql`$3::bigint`, sql`$4::bigint`, sql`$5::boolean`];
  const fields = sql.join(fieldNames(projection.reads).map((field) => sql`, ${sql.id(field)}`), sql``);
  const events = sql`(SELECT session_id, seq, kind, recorded_at${fields} FROM batch_folded WHERE kind IN (${readKinds}) AND problem IS NULL)`;
  return sql<BatchOutcome>`
    WITH batch_settings AS MATERIALIZED (
      SELECT set_config('synchronous_commit', 'off', true) AS synchronous_commit
    ),
    -- Owner and epoch, not the expiry: a lease that expired but nobody took is still this
    -- writer's (taking it moves the epoch on), and renewing it locks its row until the commit.
    batch_renewed AS (
      UPDATE projection_leases
      SET expires_at = clock_timestamp() + ${ttlMs} * interval '1 millisecond'
      WHERE projection = ${name} AND owner = ${owner} AND epoch = ${epoch}
      RETURNING 1
    ),
    batch_checkpoint AS MATERIALIZED (${checkpointSql(projection)}),
    batch_window AS MATERIALIZED (${windowSql(limit, readKinds)}),
    -- The window's last event: its last transaction's highest position (two scans, no sort).
    batch_end AS MATERIALIZED (
      SELECT transaction_id, max(position) AS position FROM batch_window
      WHERE transaction_id = (SELECT max(transaction_id) FROM batch_window) GROUP BY transaction_id
    ),
    batch_resuming AS MATERIALIZED (
      SELECT session_id FROM projection_blocked_sessions
      WHERE ${skipInvalid} AND projection = ${name} AND reason = 'unreadable'
      ORDER BY session_id LIMIT ${sql.lit(RESUMED_PER_BATCH)}
    ),
    batch_sessions AS MATERIALIZED (
      SELECT s.session_id, s.window_events, s.first_seq, s.last_seq, h.prev_seq, b.blocked_seq,
             s.resumed, coalesce(s.last_seq, t.target_seq) AS target_seq,
             s.resumed OR NOT coalesce(s.first_seq = h.prev_seq + 1 AND s.last_seq - h.prev_seq = s.window_events, false) AS needs_log
      FROM (
        SELECT coalesce(w.session_id, r.session_id) AS session_id, coalesce(w.window_events, 0) AS window_events,
               w.first_seq, CASE WHEN r.session_id IS NULL THEN w.last_seq END AS last_seq, r.session_id IS NOT NULL AS resumed
        FROM (SELECT session_id, count(*) AS window_events, min(seq) AS first_seq, max(seq) AS last_seq FROM batch_window GROUP BY session_id) AS w
        FULL JOIN batch_resuming AS r ON r.session_id = w.session_id
      ) AS s
      CROSS JOIN LATERAL (SELECT coalesce(max(last_seq), -1) AS prev_seq FROM ${heads} WHERE session_id = s.session_id) AS h
      CROSS JOIN LATERAL (
        SELECT max(seq) AS blocked_seq FROM projection_blocked_sessions
        WHERE projection = ${name} AND session_id = s.session_id AND NOT s.resumed
      ) AS b
      -- A session taken up again is folded up to its last event the checkpoint passes now.
      CROSS JOIN LATERAL (
        SELECT max(e.seq) AS target_seq FROM session_events AS e
        WHERE s.resumed AND e.session_id = s.session_id
          AND (e.transaction_id, e.position) <= (coalesce((SELECT transaction_id FROM batch_end), (SELECT transaction_id FROM batch_checkpoint)),
                                                  coalesce((SELECT position FROM batch_end), (SELECT position FROM batch_checkpoint)))
      ) AS t
    ),
    -- The rows to fold, each read once: the window's, after each session's folded seq, and the
    -- ones of the log the window lacks (events a transaction committed before others of its
    -- session that the window holds, the passed events of sessions taken up again).
    batch_read AS MATERIALIZED (
      SELECT b.position, b.session_id, b.seq, b.kind, b.recorded_at, b.prev_seq, b.needs_log, r.*
      FROM (
        SELECT w.position, w.session_id, w.seq, w.kind, w.recorded_at, w.payload, w.stand_in, s.prev_seq, s.needs_log
        FROM batch_window AS w JOIN batch_sessions AS s ON s.session_id = w.session_id
        WHERE s.blocked_seq IS NULL AND w.seq > s.prev_seq
        UNION ALL
        SELECT e.position, e.session_id, e.seq, e.kind, e.recorded_at, e.payload, e.payload_text IS NOT NULL, s.prev_seq, true
        FROM batch_sessions AS s
        JOIN session_events AS e ON e.session_id = s.session_id AND e.seq > s.prev_seq AND e.seq <= s.target_seq
        WHERE s.needs_log AND s.blocked_seq IS NULL
          AND NOT EXISTS (SELECT FROM batch_window AS w WHERE w.session_id = e.session_id AND w.seq = e.seq)
      ) AS b
      CROSS JOIN LATERAL ${readFieldsSql(projection.reads, { kind: sql`b.kind`, payload: sql`b.payload`, standIn: sql`b.stand_in` })} AS r
    ),
    -- Where each session stops: its first missing seq, or its first unreadable event. One pass
    -- over the rows keeps the few that matter: those of sessions completed from the log (where
    -- a hole can be) and the unreadable ones.
    batch_stops AS MATERIALIZED (
      SELECT DISTINCT ON (session_id) session_id, seq, position, kind, reason, problem
      FROM (
        SELECT session_id,
          CASE WHEN needs_log AND seq <> prev_seq + rank THEN prev_seq + rank ELSE seq END AS seq,
          CASE WHEN needs_log AND seq <> prev_seq + rank THEN NULL ELSE position END AS position,
          CASE WHEN needs_log AND seq <> prev_seq + rank THEN NULL ELSE kind END AS kind,
          CASE WHEN needs_log AND seq <> prev_seq + rank THEN 'hole' ELSE 'unreadable' END AS reason,
          CASE WHEN needs_log AND seq <> prev_seq + rank
               THEN format('seq %s is missing from the log (the next stored event is seq %s)', prev_seq + rank, seq)
               ELSE problem END AS problem
        FROM (
          SELECT *, row_number() OVER (PARTITION BY session_id ORDER BY seq) AS rank FROM batch_read
          WHERE needs_log OR (problem IS NOT NULL AND NOT ${skipInvalid})
        ) AS candidates
        WHERE (needs_log AND seq <> prev_seq + rank) OR (problem IS NOT NULL AND NOT ${skipInvalid})
      ) AS stops
      ORDER BY session_id, seq
    ),
    -- The rows before each session's stop (all of them, as a rule): read again where needed
    -- rather than copied once more.
    batch_folded AS NOT MATERIALIZED (
      SELECT b.* FROM batch_read AS b
      WHERE NOT EXISTS (SELECT FROM batch_stops AS s WHERE s.session_id = b.session_id AND b.seq >= s.seq)
    ),
    -- Each session that folded events or stopped: it moves to its last folded seq (the one
    -- before its stop, when it folded nothing).
    batch_moved_sessions AS MATERIALIZED (
      SELECT coalesce(p.session_id, t.session_id) AS session_id, coalesce(p.last_seq, t.seq - 1) AS last_seq,
             coalesce(p.applied, 0) AS applied${counterColumns(projection)}
      FROM (
        SELECT session_id, max(seq) AS last_seq, count(*) FILTER (WHERE problem IS NULL) AS applied
               ${countersSql(projection, sql`problem IS NULL`)}
        FROM batch_folded GROUP BY session_id
      ) AS p
      FULL JOIN batch_stops AS t ON t.session_id = p.session_id
    ),
    batch_applied AS MATERIALIZED (SELECT coalesce(sum(applied), 0)::bigint AS applied FROM batch_moved_sessions),
    batch_events AS MATERIALIZED ${events},
    ${foldExpressionsSql(projection, { events: sql`batch_events`, sessions: sql`batch_moved_sessions` })},
    batch_blocked AS (${blockSessionsSql(projection, sql`SELECT session_id, seq, position, kind, reason, problem FROM batch_stops`)} RETURNING 1),
    batch_unblocked AS (
      DELETE FROM projection_blocked_sessions
      WHERE projection = ${name} AND session_id IN (SELECT session_id FROM batch_resuming EXCEPT SELECT session_id FROM batch_stops)
      RETURNING 1
    ),
    batch_skipped AS (
      INSERT INTO projection_errors (projection, position, session_id, seq, kind, problem)
      SELECT ${name}, position, session_id, seq, kind, problem FROM batch_folded WHERE problem IS NOT NULL
      ON CONFLICT (projection, position) DO NOTHING
      RETURNING 1
    ),
    batch_moved AS (
      UPDATE projection_checkpoints AS c
      SET transaction_id = e.transaction_id, position = e.position, epoch = ${epoch},
          events_applied = c.events_applied + (SELECT applied FROM batch_applied),
          updated_at = now(), last_error = NULL, last_error_at = NULL
      FROM batch_end AS e, projection_leases AS l
      WHERE c.projection = ${name}
        AND c.transaction_id = (SELECT transaction_id FROM batch_checkpoint) AND c.position = (SELECT position FROM batch_checkpoint)
        AND c.epoch <= ${epoch}
        AND l.projection = c.projection AND l.owner = ${owner} AND l.epoch = ${epoch}
      RETURNING 1
    ),
    -- A batch with nothing to fold succeeds too: the error of one that failed before is over.
    batch_recovered AS (
      UPDATE projection_checkpoints SET last_error = NULL, last_error_at = NULL
      WHERE projection = ${name} AND last_error IS NOT NULL AND NOT EXISTS (SELECT FROM batch_end)
      RETURNING 1
    )
    SELECT
      ${versionRequiredSql(projection)} AS registered,
      os_audit_require(EXISTS (SELECT FROM batch_renewed), ${sql.lit(`projection ${projection.name}: the lease was lost`)}) AS renewed,
      os_audit_require(EXISTS (SELECT FROM batch_moved) OR NOT EXISTS (SELECT FROM batch_end),
                       ${sql.lit(`projection ${projection.name}: the checkpoint moved under this batch`)}) AS moved,
      (SELECT count(*) FROM batch_settings) AS settings,
      (SELECT count(*) FROM batch_window) AS window_count,
      (SELECT transaction_id::text FROM batch_end) AS end_transaction_id,
      (SELECT position FROM batch_end) AS end_position,
      (SELECT applied FROM batch_applied) AS applied,
      (SELECT count(*) FROM batch_skipped) AS skipped,
      (SELECT count(*) FROM batch_blocked) AS stopped_count,
      coalesce((SELECT json_agg(s ORDER BY s.session_id) FROM (SELECT * FROM batch_stops ORDER BY session_id LIMIT ${sql.lit(STOPPED_REPORTED)}) AS s), '[]') AS stopped,
      (SELECT count(*) FROM batch_unblocked) AS resumed_count`;
}

/** The counters of a moved session, each after a comma: the batch's counts, 0 where it folded nothing. */
function counterColumns(projection: Projection): RawBuilder<unknown> {
  return sql.join(
    Object.keys(projection.counters).map((column) => sql`, coalesce(p.${sql.id(column)}, 0) AS ${sql.id(column)}`),
    sql``,
  );
}

/** The parameters of {@link batchSql}, in order. */
export function batchParameters(parameters: BatchParameters): unknown[] {
  return [parameters.owner, parameters.epoch, parameters.leaseTtlMs, parameters.limit, parameters.skipInvalid];
}

/** The projection's checkpoint, as a relation of one row. */
function checkpointSql(projection: Projection): RawBuilder<unknown> {
  return sql`SELECT transaction_id, position, version FROM projection_checkpoints WHERE projection = ${sql.lit(projection.name)}`;
}

/**
 * Fails the batch (`os_audit_require`) unless the projection is registered (`os-audit
 * migrate`) and its tables were folded by the version of the fold this batch runs: a new
 * version folds nothing onto an older one's tables until they are rebuilt.
 */
function versionRequiredSql(projection: Projection): RawBuilder<boolean> {
  return sql`os_audit_require(
    EXISTS (SELECT FROM batch_checkpoint WHERE version = ${sql.lit(projection.version)}),
    coalesce(
      (SELECT format(${sql.lit(versionProblem(projection, '%s'))}, version) FROM batch_checkpoint),
      ${sql.lit(versionProblem(projection, null))}))`;
}

/**
 * Why a batch of `projection` may not fold onto tables at `tablesVersion` (null: the
 * projection is not registered), and what to run. On one server it is used in SQL (`'%s'` for
 * the version the checkpoint holds); on Citus in the batch's code.
 */
export function versionProblem(projection: Projection, tablesVersion: number | string | null): string {
  const { name, version } = projection;
  return tablesVersion === null
    ? `projection ${name} is not registered in this database: run os-audit migrate (with the same projections)`
    : `projection ${name}: its tables hold version ${tablesVersion} of its fold, and this os-audit folds version ${version}: run os-audit rebuild --projection ${name}`;
}

/**
 * The events after the checkpoint (a relation `batch_checkpoint`), up to `limit`, in
 * (transaction id, position) order, of transactions older than every transaction still in
 * progress (see {@link batchSql}).
 */
function windowSql(limit: RawBuilder<unknown>, readKinds: RawBuilder<unknown>): RawBuilder<unknown> {
  // The body only of the kinds the projection reads: the window is held in memory (or on disk).
  return sql`
    SELECT e.transaction_id, e.position, e.session_id, e.seq, e.kind, e.recorded_at,
           CASE WHEN e.kind IN (${readKinds}) THEN e.payload END AS payload, e.payload_text IS NOT NULL AS stand_in
    FROM session_events AS e
    WHERE (e.transaction_id, e.position) > ((SELECT transaction_id FROM batch_checkpoint), (SELECT position FROM batch_checkpoint))
      -- Implied by the line above; on a sealed log, partitioned by transaction, it leaves the
      -- partitions the checkpoint has passed unread (pruned as the statement runs).
      AND e.transaction_id >= (SELECT transaction_id FROM batch_checkpoint)
      AND e.transaction_id < pg_snapshot_xmin(pg_current_snapshot())
    ORDER BY e.transaction_id, e.position
    LIMIT ${limit}`;
}

/**
 * Stops the session of the `$1`-th event of the window at its first event the projection has
 * not folded, with reason `failed` and the problem `$2`, under the lease of owner `$3` and
 * epoch `$4`; returns where. (See `stopSessionFailingTheFold`.)
 */
export function stopAtWindowEventSql(projection: Projection): RawBuilder<StoppedSession> {
  const name = sql.lit(projection.name);
  return sql`
    WITH batch_checkpoint AS MATERIALIZED (${checkpointSql(projection)}),
    culprit AS (SELECT session_id FROM (${windowSql(sql`$1::bigint`, readKindsSql(projection.reads))}) AS w ORDER BY transaction_id DESC, position DESC LIMIT 1),
    first_unfolded AS (
      SELECT e.session_id, e.seq, e.position, e.kind, 'failed' AS reason, $2::text AS problem
      FROM culprit AS c
      CROSS JOIN LATERAL (SELECT coalesce(max(last_seq), -1) AS last_seq FROM ${sql.table(projection.sessionHeads)} WHERE session_id = c.session_id) AS h
      JOIN session_events AS e ON e.session_id = c.session_id AND e.seq = h.last_seq + 1
      WHERE os_audit_require(EXISTS (SELECT FROM projection_leases WHERE projection = ${name} AND owner = $3::text AND epoch = $4::bigint),
                             ${sql.lit(`projection ${projection.name}: the lease was lost`)})
    )
    ${blockSessionsSql(projection, sql`SELECT * FROM first_unfolded`)}
    RETURNING session_id, seq, position, kind, reason, problem`;
}

/** Records the sessions of `stops` (session_id, seq, position, kind, reason, problem) as stopped, each replacing an earlier stop. */
function blockSessionsSql(projection: Projection, stops: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`
    INSERT INTO projection_blocked_sessions AS b (projection, session_id, seq, position, kind, reason, problem)
    SELECT ${sql.lit(projection.name)}, s.session_id, s.seq, s.position, s.kind, s.reason, s.problem FROM (${stops}) AS s
    ON CONFLICT (projection, session_id) DO UPDATE
      SET seq = excluded.seq, position = excluded.position, kind = excluded.kind, reason = excluded.reason,
          problem = excluded.problem, blocked_at = now()`;
}
