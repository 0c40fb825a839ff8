import { type RawBuilder, sql } from 'kysely';
import type { Checkpoint } from '../checkpoint.js';
import type { Projection } from '../projection.js';

/**
 * The window of a batch: up to `limit` events after the checkpoint, in (transaction id,
 * position) order, of transactions older than every transaction still in progress. Identity
 * values are handed out at insert but become visible at commit; below that horizon nothing can
 * commit any more, so reading there never skips an event committed out of position order.
 */
export function createWindowSql(after: Checkpoint, limit: number): RawBuilder<unknown> {
  return sql`
    CREATE TEMP TABLE os_audit_window ON COMMIT DROP AS
    SELECT transaction_id, position, session_id, seq
    FROM session_events
    WHERE (transaction_id, position) > (${after.transactionId}::xid8, ${after.position}::bigint)
      AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
    ORDER BY transaction_id, position
    LIMIT ${limit}`;
}

/**
 * The events a batch folds: for each session of the window, every event after the one the
 * projection folded last, up to the highest seq of the window. Events of one session are
 * applied in seq order even when transactions committed them in another order; an event met
 * again later in the window is then a duplicate and is not fetched again. `problem` says why
 * the projection cannot read an event (a poison event), or is NULL.
 */
export function createBatchSql(projection: Projection): RawBuilder<unknown> {
  return sql`
    CREATE TEMP TABLE os_audit_batch ON COMMIT DROP AS
    WITH targets AS (
      SELECT w.session_id, max(w.seq) AS target_seq, coalesce(max(h.last_seq), -1) AS prev_seq
      FROM os_audit_window w
      LEFT JOIN ${sql.table(projection.sessionHeads)} h ON h.session_id = w.session_id
      GROUP BY w.session_id
    )
    SELECT e.position, e.session_id, e.seq, e.kind, e.recorded_at, t.prev_seq, t.target_seq,
      CASE WHEN e.kind IN (${sql.join(projection.readsPayloadOf)}) THEN e.payload END AS payload,
      ${sql.ref(projection.problemFunction)}(e.kind, CASE WHEN e.kind IN (${sql.join(projection.readsPayloadOf)}) THEN e.payload END) AS problem
    FROM targets t
    JOIN session_events e ON e.session_id = t.session_id AND e.seq > t.prev_seq AND e.seq <= t.target_seq`;
}

export interface BatchSummary {
  window_count: number;
  end_transaction_id: string | null;
  end_position: number | null;
  batch_count: number;
  /** The first hole in a session's log: the seq that is missing and the next one stored. */
  jump: { session_id: string; missing_seq: number; next_stored_seq: number } | null;
  /** The first event the projection cannot read: `{position, session_id, seq, kind, problem}`. */
  poison: { position: number; session_id: string; seq: number; kind: string; problem: string } | null;
}

/** Where the window ends, how big the batch is, and what in it must stop the projection. */
export function summarizeBatchSql(): RawBuilder<BatchSummary> {
  return sql`
    SELECT
      (SELECT count(*) FROM os_audit_window) AS window_count,
      last.transaction_id::text AS end_transaction_id,
      last.position AS end_position,
      (SELECT count(*) FROM os_audit_batch) AS batch_count,
      (SELECT json_build_object('session_id', session_id, 'missing_seq', prev_seq + rank, 'next_stored_seq', seq)
       FROM (SELECT session_id, seq, prev_seq, row_number() OVER (PARTITION BY session_id ORDER BY seq) AS rank
             FROM os_audit_batch) AS numbered
       WHERE seq <> prev_seq + rank
       ORDER BY session_id, seq LIMIT 1) AS jump,
      (SELECT json_build_object('position', position, 'session_id', session_id, 'seq', seq, 'kind', kind, 'problem', problem)
       FROM os_audit_batch WHERE problem IS NOT NULL ORDER BY position LIMIT 1) AS poison
    FROM (SELECT NULL) AS one
    LEFT JOIN LATERAL (
      SELECT transaction_id, position FROM os_audit_window ORDER BY transaction_id DESC, position DESC LIMIT 1
    ) AS last ON true`;
}

/** Sets the batch's poison events aside (`--skip-invalid`), in the same transaction. */
export function recordSkippedSql(projection: Projection): RawBuilder<unknown> {
  return sql`
    INSERT INTO projection_errors (projection, position, session_id, seq, kind, problem)
    SELECT ${projection.name}, position, session_id, seq, kind, problem
    FROM os_audit_batch WHERE problem IS NOT NULL`;
}

/** Drops the batch tables, so that several batches can run in one transaction (a rebuild). */
export function dropBatchTablesSql(): RawBuilder<unknown> {
  return sql`DROP TABLE os_audit_window, os_audit_batch`;
}

/**
 * Moves the checkpoint from `from` to `to`, only if it is still at `from` and the writer still
 * holds the lease of this epoch (the fencing token): otherwise no row changes, and the caller
 * rolls the batch back.
 */
export function moveCheckpointSql(
  projection: string,
  from: Checkpoint,
  to: Checkpoint,
  lease: { owner: string; epoch: number },
  eventsApplied: number,
): RawBuilder<{ moved: number }> {
  return sql`
    UPDATE projection_checkpoints AS c
    SET transaction_id = ${to.transactionId}::xid8, position = ${to.position},
        epoch = ${lease.epoch}, events_applied = c.events_applied + ${eventsApplied},
        updated_at = now(), last_error = NULL, last_error_at = NULL
    FROM projection_leases AS l
    WHERE c.projection = ${projection}
      AND c.transaction_id = ${from.transactionId}::xid8 AND c.position = ${from.position}
      AND c.epoch <= ${lease.epoch}
      AND l.projection = c.projection AND l.owner = ${lease.owner} AND l.epoch = ${lease.epoch}
      AND l.expires_at > clock_timestamp()
    RETURNING 1 AS moved`;
}
