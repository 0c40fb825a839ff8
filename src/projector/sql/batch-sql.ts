import { type RawBuilder, sql } from 'kysely';
import type { Checkpoint } from '../checkpoint.js';
import type { PreparedStatement } from '../../db/prepared-statement.js';
import { eventBatchOf, type Projection } from '../projection.js';
import { renewLeaseSql } from './lease-sql.js';

/**
 * The columns of a batch row from an event `e` of `session_events`: the body only for the
 * kinds the projection reads, and why it cannot read the event. Events stored by os-audit's
 * own writers were checked at the door (`validated`); only the others are checked here.
 */
function eventColumns(projection: Projection): RawBuilder<unknown> {
  const reads = sql.join(projection.readsPayloadOf);
  return sql`
    e.transaction_id, e.position, e.session_id, e.seq, e.kind, e.recorded_at,
    CASE WHEN e.kind IN (${reads}) THEN e.payload END AS payload,
    CASE WHEN NOT e.validated AND e.kind IN (${reads}) THEN ${sql.ref(projection.problemFunction)}(e.kind, e.payload) END AS problem`;
}

/** The batch table's columns in the order of {@link eventColumns}, then the session's last folded seq. */
const BATCH_ROW = sql`os_audit_batch (transaction_id, position, session_id, seq, kind, recorded_at, payload, problem, prev_seq)`;

/**
 * The events after a checkpoint, up to `limit`, in (transaction id, position) order, of
 * transactions older than every transaction still in progress. Identity values are handed out
 * at insert but become visible at commit; below that horizon nothing can commit any more, so
 * reading there never skips an event committed out of position order.
 */
function windowSql(after: Checkpoint, limit: number): RawBuilder<unknown> {
  return sql`
    SELECT * FROM session_events
    WHERE (transaction_id, position) > (${after.transactionId}::xid8, ${after.position}::bigint)
      AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
    ORDER BY transaction_id, position
    LIMIT ${limit}`;
}

/**
 * Per session of a batch's rows (`GROUP BY session_id`): how many, the first and last seq, the
 * last transaction, and whether any is poison.
 */
const SESSION_EXTENT = sql`
  count(*) AS events, min(seq) AS first_seq, max(seq) AS last_seq,
  max(transaction_id) AS last_transaction_id, bool_or(problem IS NOT NULL) AS has_poison`;

/**
 * Whether the rows of `session` (a {@link SESSION_EXTENT}) are exactly its events after
 * `prevSeq`, its last folded seq: the batch can fold them as they are.
 */
function followsFoldedSql(session: RawBuilder<unknown>, prevSeq: RawBuilder<unknown>): RawBuilder<boolean> {
  return sql`(${session}.first_seq = ${prevSeq} + 1 AND ${session}.last_seq - ${prevSeq} = ${session}.events)`;
}

/** Where a batch of `rows` ends in the log, once its last transaction is known: that transaction's last position among them. */
function endPositionSql(rows: RawBuilder<unknown>, endTransactionId: RawBuilder<unknown>): RawBuilder<number | null> {
  return sql`(SELECT max(position) FROM ${rows} WHERE transaction_id = ${endTransactionId})`;
}

/** What a batch starts from: the lease renewed (or not), the checkpoint, the planner's settings. */
export interface BatchStart {
  renewed: boolean;
  transaction_id: string;
  position: number;
  enable_sort: string;
  enable_bitmapscan: string;
  /** Whether this connection has its batch table already (see {@link createBatchTableSql}). */
  has_batch_table: boolean;
  /** Whether this connection has the projection's fold prepared already. */
  has_prepared_fold: boolean;
}

/**
 * Starts a batch in one round trip: renews the lease (locking its row until the transaction
 * ends), reads the checkpoint, and makes {@link fillBatchSql} walk the log's index in order.
 * The batch commits without waiting for its WAL to reach the disk: the snapshot tables are
 * derived data that move together with their checkpoint, so a crash can only lose a whole
 * batch, which is then folded again; the event log itself is always written synchronously.
 * The planner cannot estimate the horizon and, without fresh statistics (right after a bulk
 * import), would sort the whole backlog for every batch; {@link measureBatchSql} gives it its
 * own settings back. Sorts then cost so much on paper that the server would compile the
 * statements of {@link foldWindowSql} with JIT, for longer than they run: no JIT in a batch.
 */
export function beginBatchSql(
  projection: string,
  lease: { owner: string; epoch: number },
  ttlMs: number,
  fold: PreparedStatement,
): RawBuilder<BatchStart> {
  return sql`
    WITH renewed AS (${renewLeaseSql(projection, lease.owner, lease.epoch, ttlMs)}),
    planner AS MATERIALIZED (
      SELECT current_setting('enable_sort') AS enable_sort, current_setting('enable_bitmapscan') AS enable_bitmapscan
    )
    SELECT EXISTS (SELECT 1 FROM renewed) AS renewed, c.transaction_id::text AS transaction_id, c.position,
           planner.enable_sort, planner.enable_bitmapscan,
           to_regclass('pg_temp.os_audit_batch') IS NOT NULL AS has_batch_table,
           (${fold.isPrepared}) AS has_prepared_fold,
           set_config('enable_sort', 'off', true) IS NOT NULL AND set_config('enable_bitmapscan', 'off', true) IS NOT NULL AS index_order,
           set_config('synchronous_commit', 'off', true) IS NOT NULL AS commit_without_flush_wait,
           set_config('jit', 'off', true) IS NOT NULL AS no_jit
    FROM projection_checkpoints AS c, planner
    WHERE c.projection = ${projection}`;
}

/**
 * The batch table, one per connection, emptied at every commit: created once rather than per
 * batch, which would cost catalog writes every time.
 */
export function createBatchTableSql(): RawBuilder<unknown> {
  return sql`
    CREATE TEMP TABLE IF NOT EXISTS os_audit_batch (
      transaction_id xid8 NOT NULL, position bigint NOT NULL, session_id text NOT NULL, seq bigint NOT NULL,
      kind text NOT NULL, recorded_at timestamptz NOT NULL, prev_seq bigint NOT NULL, payload jsonb, problem text
    ) ON COMMIT DELETE ROWS`;
}

/**
 * Fills the batch with the {@link windowSql window} after the checkpoint, each row with its
 * session's last folded seq. A previous batch of the same transaction (a rebuild) is cleared
 * first.
 */
export function fillBatchSql(projection: Projection, after: Checkpoint, limit: number): RawBuilder<unknown> {
  return sql`
    WITH previous_batch AS (DELETE FROM os_audit_batch)
    INSERT INTO ${BATCH_ROW}
    SELECT ${eventColumns(projection)}, coalesce(h.last_seq, -1)
    FROM (${windowSql(after, limit)}) AS e
    LEFT JOIN ${sql.table(projection.sessionHeads)} AS h ON h.session_id = e.session_id`;
}

/** The projection's fold of the batch table, as one statement. */
export function foldBatchSql(projection: Projection): RawBuilder<unknown> {
  return sql`WITH ${projection.foldSql(eventBatchOf(sql`os_audit_batch`, projection.sessionAggregates))} SELECT`;
}

/** What {@link foldWindowSql} did: where its window ends, and whether it folded it. */
export interface WindowFold {
  window_count: number;
  end_transaction_id: string | null;
  end_position: number | null;
  /** The window was simple, and is folded; otherwise nothing was written. */
  folded: boolean;
}

/**
 * A batch in one statement straight from the log, without the batch table: reads the
 * {@link windowSql window} after the checkpoint into the statement's memory, groups it by
 * session once (its checks and the projection's {@link Projection.sessionAggregates}),
 * requires what a batch needs to be folded as it is — each session's events following its
 * last folded seq without a gap, none poison — and, only then, folds it with the projection's
 * fold, which gets the sessions and the rows whose body it reads. A window that is not simple
 * writes nothing, and the caller takes it through the batch table ({@link fillBatchSql} and
 * what follows).
 */
export function foldWindowSql(projection: Projection, after: Checkpoint, limit: number): RawBuilder<WindowFold> {
  const simple = sql`(SELECT simple FROM batch_extent)`;
  const events = sql`(SELECT session_id, seq, kind, recorded_at, payload, problem FROM batch_window WHERE payload IS NOT NULL AND ${simple})`;
  const sessions = sql`(SELECT * FROM batch_sessions WHERE ${simple})`;
  return sql`
    WITH batch_window AS MATERIALIZED (
      SELECT ${eventColumns(projection)} FROM (${windowSql(after, limit)}) AS e
    ),
    batch_sessions AS (
      SELECT session_id, ${SESSION_EXTENT}, ${projection.sessionAggregates}
      FROM batch_window GROUP BY session_id
    ),
    batch_extent AS MATERIALIZED (
      SELECT coalesce(sum(b.events), 0)::bigint AS window_count, max(b.last_transaction_id) AS end_transaction_id,
             coalesce(bool_and(${followsFoldedSql(sql`b`, sql`h.prev_seq`)} AND NOT b.has_poison), true) AS simple
      FROM batch_sessions AS b
      CROSS JOIN LATERAL (
        SELECT coalesce(max(last_seq), -1) AS prev_seq FROM ${sql.table(projection.sessionHeads)} WHERE session_id = b.session_id
      ) AS h
    ),
    ${projection.foldSql({ events, sessions })}
    SELECT window_count, end_transaction_id::text AS end_transaction_id, simple AS folded,
      ${endPositionSql(sql`batch_window`, sql`x.end_transaction_id`)} AS end_position
    FROM batch_extent AS x`;
}

/**
 * Makes each session's rows of the batch exactly the events after its last folded seq, up to
 * the highest seq the batch read, in the rare cases they are not: events already folded (met
 * again) are dropped, and events a transaction with a higher id committed earlier in the log
 * (always committed before the ones that follow them) are fetched. Events of one session are
 * thus folded in seq order, whatever order transactions committed them in.
 */
export function completeBatchSql(projection: Projection): RawBuilder<unknown> {
  return sql`
    WITH folded_already AS (
      DELETE FROM os_audit_batch WHERE seq <= prev_seq RETURNING 1
    ),
    incomplete AS (
      SELECT session_id, prev_seq, max(seq) AS target_seq
      FROM os_audit_batch WHERE seq > prev_seq
      GROUP BY session_id, prev_seq
      HAVING min(seq) <> prev_seq + 1 OR max(seq) - prev_seq <> count(*)
    )
    INSERT INTO ${BATCH_ROW}
    SELECT ${eventColumns(projection)}, t.prev_seq
    FROM incomplete AS t
    JOIN session_events AS e ON e.session_id = t.session_id AND e.seq > t.prev_seq AND e.seq <= t.target_seq
    WHERE NOT EXISTS (SELECT 1 FROM os_audit_batch AS b WHERE b.session_id = e.session_id AND b.seq = e.seq)`;
}

/** Checks every event of the batch the projection reads, trusted or not (after a failed fold). */
export function recheckBatchSql(projection: Projection): RawBuilder<unknown> {
  return sql`
    UPDATE os_audit_batch SET problem = ${sql.ref(projection.problemFunction)}(kind, payload)
    WHERE payload IS NOT NULL`;
}

export interface BatchInspection {
  batch_count: number;
  /** The first hole in a session's log: the seq that is missing and the next one stored. */
  jump: { session_id: string; missing_seq: number; next_stored_seq: number } | null;
  /** The first event the projection cannot read: `{position, session_id, seq, kind, problem}`. */
  poison: { position: number; session_id: string; seq: number; kind: string; problem: string } | null;
}

/**
 * Where the batch ends in the log, whether some session's rows need {@link completeBatchSql},
 * and whether any event is poison: one grouped pass and a small one over the batch.
 */
function batchExtentSql(): RawBuilder<unknown> {
  return sql`
    WITH per_session AS (
      SELECT ${SESSION_EXTENT}, min(prev_seq) AS prev_seq
      FROM os_audit_batch GROUP BY session_id
    ),
    extent AS (
      SELECT coalesce(sum(events), 0)::bigint AS window_count, max(last_transaction_id) AS end_transaction_id,
             coalesce(bool_or(has_poison), false) AS has_poison,
             coalesce(bool_or(NOT ${followsFoldedSql(sql`per_session`, sql`per_session.prev_seq`)}), false) AS incomplete
      FROM per_session
    )
    SELECT window_count, end_transaction_id, has_poison, incomplete,
      ${endPositionSql(sql`os_audit_batch`, sql`extent.end_transaction_id`)} AS end_position
    FROM extent`;
}

/** The batch's {@link batchExtentSql extent}; gives the planner back the settings {@link beginBatchSql} found. */
export function measureBatchSql(planner: Pick<BatchStart, 'enable_sort' | 'enable_bitmapscan'>): RawBuilder<BatchExtent> {
  return sql`
    WITH restored AS MATERIALIZED (
      SELECT set_config('enable_sort', ${planner.enable_sort}, true), set_config('enable_bitmapscan', ${planner.enable_bitmapscan}, true)
    )
    SELECT (SELECT count(*) FROM restored) AS restored, window_count, end_transaction_id::text AS end_transaction_id,
      has_poison, incomplete, end_position
    FROM (${batchExtentSql()}) AS extent`;
}

export interface BatchExtent {
  window_count: number;
  end_transaction_id: string | null;
  end_position: number | null;
  has_poison: boolean;
  incomplete: boolean;
}

/** What in the batch must stop the projection: a hole in a log, or an event it cannot read. */
export function inspectBatchSql(): RawBuilder<BatchInspection> {
  return sql`
    SELECT
      (SELECT count(*) FROM os_audit_batch) AS batch_count,
      (SELECT json_build_object('session_id', session_id, 'missing_seq', prev_seq + rank, 'next_stored_seq', seq)
       FROM (SELECT session_id, seq, prev_seq, row_number() OVER (PARTITION BY session_id ORDER BY seq) AS rank
             FROM os_audit_batch) AS numbered
       WHERE seq <> prev_seq + rank
       ORDER BY session_id, seq LIMIT 1) AS jump,
      (SELECT json_build_object('position', position, 'session_id', session_id, 'seq', seq, 'kind', kind, 'problem', problem)
       FROM os_audit_batch WHERE problem IS NOT NULL ORDER BY position LIMIT 1) AS poison`;
}

/** Sets the batch's poison events aside (`--skip-invalid`), in the same transaction. */
export function recordSkippedSql(projection: Projection): RawBuilder<unknown> {
  return sql`
    INSERT INTO projection_errors (projection, position, session_id, seq, kind, problem)
    SELECT ${projection.name}, position, session_id, seq, kind, problem
    FROM os_audit_batch WHERE problem IS NOT NULL`;
}

/** Where {@link moveCheckpointSql} moves the checkpoint to, as SQL values: the batch's end. */
export function checkpointTargetSql(to: Checkpoint, eventsApplied: number): RawBuilder<CheckpointTarget> {
  return sql`SELECT ${to.transactionId}::xid8 AS transaction_id, ${to.position}::bigint AS position, ${eventsApplied}::bigint AS events_applied`;
}

/** A relation of one row (or none: nothing moves) saying where the checkpoint goes. */
export interface CheckpointTarget {
  transaction_id: string;
  position: number;
  events_applied: number;
}

/**
 * Moves the checkpoint from `from` to the row of `target`, only if it is still at `from` and
 * the lease is still this writer's, of this epoch (the fencing token): otherwise no row
 * changes, and the caller rolls the batch back. The lease may have expired meanwhile: the batch
 * has held its row since renewing it, so no one else can have taken it, however long the batch
 * took.
 */
export function moveCheckpointSql(
  projection: string,
  from: Checkpoint,
  target: RawBuilder<CheckpointTarget>,
  lease: { owner: string; epoch: number },
): RawBuilder<{ transaction_id: string; position: number; events_applied: number }> {
  return sql`
    UPDATE projection_checkpoints AS c
    SET transaction_id = t.transaction_id, position = t.position,
        epoch = ${lease.epoch}, events_applied = c.events_applied + t.events_applied,
        updated_at = now(), last_error = NULL, last_error_at = NULL
    FROM projection_leases AS l, (${target}) AS t
    WHERE c.projection = ${projection}
      AND c.transaction_id = ${from.transactionId}::xid8 AND c.position = ${from.position}
      AND c.epoch <= ${lease.epoch}
      AND l.projection = c.projection AND l.owner = ${lease.owner} AND l.epoch = ${lease.epoch}
    RETURNING t.transaction_id::text AS transaction_id, t.position, t.events_applied`;
}

/**
 * The script of a batch in one round trip ({@link runBatchInOneTrip}) runs these between its
 * fill and its fold. The lease is renewed (and its row locked), then the batch is required to
 * be one the fold can take as it is: no more than `maxEvents` rows, each session's rows
 * following its last folded seq, no poison. Anything else stops the script before the fold,
 * and the careful path runs the batch again.
 */
export function requireSimpleBatchSql(
  projection: string,
  lease: { owner: string; epoch: number },
  ttlMs: number,
  maxEvents: number,
): RawBuilder<unknown> {
  return sql`
    WITH renewed AS (${renewLeaseSql(projection, lease.owner, lease.epoch, ttlMs)})
    SELECT os_audit_require(EXISTS (SELECT FROM renewed), ${`projection ${projection}: the lease of ${lease.owner} (epoch ${lease.epoch}) was not renewed`}),
           os_audit_require(extent.window_count <= ${maxEvents} AND NOT extent.incomplete AND NOT extent.has_poison,
                            'the batch needs the careful path')
    FROM (${batchExtentSql()}) AS extent`;
}

/**
 * Moves the checkpoint to the end of a simple batch (see {@link requireSimpleBatchSql}) and
 * says where to; requires that it moved, unless the batch was empty.
 */
export function moveCheckpointToBatchEndSql(projection: string, from: Checkpoint, lease: { owner: string; epoch: number }): RawBuilder<SimpleBatchEnd> {
  const end = sql<CheckpointTarget>`
    SELECT end_transaction_id AS transaction_id, end_position AS position, window_count AS events_applied
    FROM (${batchExtentSql()}) AS extent WHERE window_count > 0`;
  return sql`
    WITH moved AS (${moveCheckpointSql(projection, from, end, lease)})
    SELECT os_audit_require(EXISTS (SELECT FROM moved) OR NOT EXISTS (SELECT FROM os_audit_batch),
                            ${`projection ${projection}: the checkpoint is no longer where this batch started`}) AS moved,
           moved.transaction_id, moved.position, moved.events_applied
    FROM (SELECT) AS one LEFT JOIN moved ON true`;
}

export interface SimpleBatchEnd {
  /** Null when the batch was empty. */
  transaction_id: string | null;
  position: number | null;
  events_applied: number | null;
}

/**
 * The settings of {@link beginBatchSql}, for a script that cannot read the planner's first:
 * {@link defaultPlannerSettingsSql} gives the planner its own back after the fill (and the
 * commit would). Left on, they would make every sort of the fold cost so much on paper that
 * the server compiles it with JIT, for over a second.
 */
export function simpleBatchSettingsSql(): RawBuilder<unknown> {
  return sql`
    SELECT set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true),
           set_config('synchronous_commit', 'off', true)`;
}

/** Gives the planner the settings of the session back (see {@link simpleBatchSettingsSql}). */
export function defaultPlannerSettingsSql(): RawBuilder<unknown> {
  return sql`
    SELECT set_config(name, reset_val, true) FROM pg_settings WHERE name IN ('enable_sort', 'enable_bitmapscan')`;
}
