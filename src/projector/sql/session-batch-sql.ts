import { type RawBuilder, sql } from 'kysely';
import { fieldColumnsDefinitionSql, fieldNames, rawFieldsSql, readFieldColumnsSql, readKindsSql } from '../event-reads.js';
import { countersSql, type EventBatchSql, type Projection } from '../projection.js';
import type { StoppedSession } from './batch-sql.js';

/**
 * The statements of one batch on Citus, run in order in one transaction (see
 * `runSessionBatch`). A batch finds its events by each session's seq, not by transaction id,
 * and each statement joins the colocated tables on `session_id`, so that it runs on the shards.
 * Why: docs/design/projector-batch.md.
 *
 * Parameters: each builder says which it takes; they are bound positionally.
 */

/** `$1` owner, `$2` epoch, `$3` lease time in ms: renews the lease (its row stays locked to the commit) and gives the projection's version. */
export function renewLeaseSql(projection: Projection): RawBuilder<{ version: number }> {
  return sql`
    UPDATE projection_leases
    SET expires_at = clock_timestamp() + $3::bigint * interval '1 millisecond'
    WHERE projection = ${sql.lit(projection.name)} AND owner = $1::text AND epoch = $2::bigint
    RETURNING (SELECT version FROM projection_checkpoints WHERE projection = ${sql.lit(projection.name)}) AS version`;
}

/** Takes up again the sessions stopped at an unreadable event (with `--skip-invalid`): it sets them aside from now on. */
export function resumeUnreadableSql(projection: Projection): RawBuilder<{ session_id: string }> {
  return sql`
    DELETE FROM projection_blocked_sessions
    WHERE projection = ${sql.lit(projection.name)} AND reason = 'unreadable'
    RETURNING session_id`;
}

/**
 * `$1` the most events of the batch, `$2` the sessions to take (null: all): the batch's
 * sessions, each from the seq after its head in the projection towards the session's head,
 * unless the session is stopped. At most `$1` events in all, as `--batch-size` documents.
 * Sessions are taken oldest backlog first; the last may get part of its backlog. One row per
 * session with a backlog, no event.
 */
export function planWorkSql(projection: Projection): RawBuilder<unknown> {
  const name = sql.lit(projection.name);
  return sql`
    WITH pending AS MATERIALIZED (
      SELECT s.session_id, coalesce(h.last_seq, -1) AS prev_seq, s.last_seq - coalesce(h.last_seq, -1) AS backlog, e.position
      FROM sessions AS s
      LEFT JOIN (SELECT session_id, max(last_seq) AS last_seq FROM ${sql.table(projection.sessionHeads)} GROUP BY session_id) AS h
        ON h.session_id = s.session_id
      LEFT JOIN projection_blocked_sessions AS b ON b.session_id = s.session_id AND b.projection = ${name}
      LEFT JOIN session_events AS e ON e.session_id = s.session_id AND e.seq = coalesce(h.last_seq, -1) + 1
      WHERE s.last_seq > coalesce(h.last_seq, -1) AND b.session_id IS NULL
        AND ($2::text[] IS NULL OR s.session_id = ANY ($2::text[]))
    ),
    ordered AS (
      SELECT session_id, prev_seq, backlog,
        sum(backlog) OVER (ORDER BY position NULLS FIRST, session_id ROWS UNBOUNDED PRECEDING) - backlog AS before
      FROM pending
    )
    INSERT INTO projection_work (projection, session_id, prev_seq, target_seq)
    SELECT ${name}, session_id, prev_seq, prev_seq + least(backlog, $1::bigint - before)
    FROM ordered
    WHERE before < $1::bigint`;
}

/** The projection's batch table on Citus: the batch's events, read. */
export function batchTableOf(projection: Projection): string {
  return `projection_batch_${projection.name}`;
}

/** Creates the projection's batch table (see {@link batchTableOf}): unlogged, emptied by each batch. */
export function createBatchTableSql(projection: Projection): RawBuilder<unknown> {
  return sql`
    CREATE UNLOGGED TABLE ${sql.table(batchTableOf(projection))} (
      session_id text NOT NULL, seq bigint NOT NULL, position bigint NOT NULL, kind text NOT NULL,
      recorded_at timestamptz NOT NULL, problem text${fieldNames(projection.reads).length > 0 ? sql`, ${fieldColumnsDefinitionSql(projection.reads)}` : sql``}
    )`;
}

/** Reads the batch's events into the batch table: each with `problem` (why the projection cannot read it, else null) and the fields it reads. */
export function readWorkSql(projection: Projection): RawBuilder<unknown> {
  const event = { kind: sql`e.kind`, payload: sql`e.payload`, standIn: sql<boolean>`e.payload_text IS NOT NULL` };
  return sql`
    INSERT INTO ${sql.table(batchTableOf(projection))}
    SELECT e.session_id, e.seq, e.position, e.kind, e.recorded_at, ${readFieldColumnsSql(projection.reads, event, sql`r`)}
    FROM projection_work AS w
    JOIN session_events AS e ON e.session_id = w.session_id AND e.seq > w.prev_seq AND e.seq <= w.target_seq
    CROSS JOIN LATERAL ${rawFieldsSql(projection.reads, event)}
    WHERE w.projection = ${sql.lit(projection.name)}`;
}

/** The batch table's events up to each session's target, with the session's `prev_seq` and `target_seq`. */
function workEventsSql(projection: Projection): RawBuilder<unknown> {
  return sql`(
    SELECT b.*, w.prev_seq, w.target_seq
    FROM ${sql.table(batchTableOf(projection))} AS b
    JOIN projection_work AS w ON w.session_id = b.session_id AND w.projection = ${sql.lit(projection.name)}
    WHERE b.seq <= w.target_seq
  )`;
}

/**
 * `$1` skip-invalid: stops each session of the batch at its first missing seq, or (unless
 * skipping) its first unreadable event, and returns the stops. (The store keeps logs
 * contiguous; a hole comes only from a repair that bypassed its checks.)
 */
export function stopSessionsSql(projection: Projection): RawBuilder<StoppedSession> {
  return sql`
    INSERT INTO projection_blocked_sessions AS b (projection, session_id, seq, position, kind, reason, problem)
    SELECT DISTINCT ON (session_id) ${sql.lit(projection.name)}, session_id,
      CASE WHEN hole THEN missing_seq ELSE seq END,
      CASE WHEN hole THEN NULL ELSE position END,
      CASE WHEN hole THEN NULL ELSE kind END,
      CASE WHEN hole THEN 'hole' ELSE 'unreadable' END,
      CASE WHEN hole AND missing_seq < seq THEN format('seq %s is missing from the log (the next stored event is seq %s)', missing_seq, seq)
           WHEN hole THEN format('seq %s is missing from the log (the log ends at seq %s before its head, %s)', missing_seq, seq, target_seq)
           ELSE problem END
    FROM (
      SELECT *, CASE WHEN seq <> prev_seq + rank THEN prev_seq + rank ELSE seq + 1 END AS missing_seq,
             seq <> prev_seq + rank OR (rank = log_events AND seq < target_seq) AS hole
      FROM (
        SELECT *, row_number() OVER (PARTITION BY session_id ORDER BY seq) AS rank, count(*) OVER (PARTITION BY session_id) AS log_events
        FROM ${workEventsSql(projection)} AS e
      ) AS ranked
    ) AS events
    WHERE hole OR (problem IS NOT NULL AND NOT $1::boolean)
    ORDER BY session_id, CASE WHEN hole THEN missing_seq ELSE seq END
    ON CONFLICT (projection, session_id) DO UPDATE
      SET seq = excluded.seq, position = excluded.position, kind = excluded.kind, reason = excluded.reason,
          problem = excluded.problem, blocked_at = excluded.blocked_at
    RETURNING session_id, seq, position, kind, reason, problem`;
}

/** Ends each stopped session's part of the batch before its stop. */
export function trimWorkSql(projection: Projection): RawBuilder<unknown> {
  const name = sql.lit(projection.name);
  return sql`
    UPDATE projection_work AS w SET target_seq = b.seq - 1
    FROM projection_blocked_sessions AS b
    WHERE w.projection = ${name} AND b.projection = ${name} AND b.session_id = w.session_id`;
}

/** The batch's relations for the projection's fold statements: readable events of the kinds it reads, and each session that moves. */
export function workBatchSql(projection: Projection): EventBatchSql {
  return {
    events: sql`(
      SELECT session_id, seq, kind, recorded_at${sql.join(fieldNames(projection.reads).map((name) => sql`, ${sql.id(name)}`), sql``)}
      FROM ${workEventsSql(projection)} AS e WHERE kind IN (${readKindsSql(projection.reads)}) AND problem IS NULL
    )`,
    sessions: sql`(
      SELECT session_id, max(seq) AS last_seq${countersSql(projection, sql`problem IS NULL`)}
      FROM ${workEventsSql(projection)} AS e GROUP BY session_id
    )`,
  };
}

/** Sets the batch's unreadable events aside (with `--skip-invalid`), a row returned for each. */
export function setAsideSql(projection: Projection): RawBuilder<unknown> {
  return sql`
    INSERT INTO projection_errors (projection, position, session_id, seq, kind, problem)
    SELECT ${sql.lit(projection.name)}, position, session_id, seq, kind, problem FROM ${workEventsSql(projection)} AS e
    WHERE problem IS NOT NULL
    ON CONFLICT DO NOTHING
    RETURNING 1`;
}

/** The events the batch moves past: `events`. */
export function workSizeSql(projection: Projection): RawBuilder<{ events: string }> {
  return sql`SELECT count(*) AS events FROM ${workEventsSql(projection)} AS e`;
}

/** `$1` events folded, `$2` epoch: counts the batch on the checkpoint row. */
export function countBatchSql(projection: Projection): RawBuilder<unknown> {
  return sql`
    UPDATE projection_checkpoints
    SET events_applied = events_applied + $1::bigint, epoch = $2::bigint, updated_at = now(), last_error = NULL, last_error_at = NULL
    WHERE projection = ${sql.lit(projection.name)}`;
}

/** Empties the projection's part of `projection_work`: the batch is folded. */
export function clearWorkSql(projection: Projection): RawBuilder<unknown> {
  return sql`DELETE FROM projection_work WHERE projection = ${sql.lit(projection.name)}`;
}

/** Empties the projection's batch table. */
export function clearBatchSql(projection: Projection): RawBuilder<unknown> {
  return sql`DELETE FROM ${sql.table(batchTableOf(projection))}`;
}

/** The sessions of the batch planned: `session_id`, in order. */
export function workSessionsSql(projection: Projection): RawBuilder<{ session_id: string }> {
  return sql`SELECT session_id FROM projection_work WHERE projection = ${sql.lit(projection.name)} ORDER BY session_id`;
}

/**
 * `$1` session, `$2` problem: stops the session at its first event the projection has not
 * folded, with reason `failed` (the projection's SQL failed on its events); returns where.
 */
export function stopFailedSessionSql(projection: Projection): RawBuilder<StoppedSession> {
  return sql`
    INSERT INTO projection_blocked_sessions AS b (projection, session_id, seq, position, kind, reason, problem)
    SELECT ${sql.lit(projection.name)}, e.session_id, e.seq, e.position, e.kind, 'failed', $2::text
    FROM session_events AS e
    WHERE e.session_id = $1::text
      AND e.seq = (SELECT coalesce(max(last_seq), -1) + 1 FROM ${sql.table(projection.sessionHeads)} WHERE session_id = $1::text)
    ON CONFLICT (projection, session_id) DO UPDATE
      SET seq = excluded.seq, position = excluded.position, kind = excluded.kind, reason = excluded.reason,
          problem = excluded.problem, blocked_at = excluded.blocked_at
    RETURNING session_id, seq, position, kind, reason, problem`;
}

/** The batch's statements by name (all but the projection's fold), as `runSessionBatch` runs them. */
export const SESSION_BATCH_STATEMENTS = {
  renewLease: renewLeaseSql,
  resumeUnreadable: resumeUnreadableSql,
  planWork: planWorkSql,
  readWork: readWorkSql,
  stopSessions: stopSessionsSql,
  trimWork: trimWorkSql,
  setAside: setAsideSql,
  workSize: workSizeSql,
  countBatch: countBatchSql,
  clearWork: clearWorkSql,
  clearBatch: clearBatchSql,
  workSessions: workSessionsSql,
  stopFailedSession: stopFailedSessionSql,
} satisfies Record<string, (projection: Projection) => RawBuilder<unknown>>;
