import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { exactInteger } from '../db/exact-integer.js';
import { storeIsDistributed } from '../db/distributed-store.js';

/** The open transaction that keeps new events from being projected. */
export interface HorizonHolder {
  pid: number | null;
  database: string | null;
  application: string | null;
  state: string | null;
  transactionAgeSeconds: number | null;
  query: string | null;
  /** Set for a prepared (two-phase) transaction. */
  preparedTransaction: string | null;
}

/**
 * A session a projection is stopped at.
 *
 * @example
 * ```ts
 * for (const blocked of (await readProjectionStatus(db, projection.name)).blocked) console.log(blocked.sessionId, blocked.seq, blocked.problem);
 * ```
 */
export interface BlockedSession {
  sessionId: string;
  seq: number;
  kind: string | null;
  reason: string;
  problem: string;
  since: Date;
}

/** How many stopped sessions a status names. */
const BLOCKED_LISTED = 5;

/** What `os-audit status` shows: how far a projection is, who writes it, what holds it back. */
export interface ProjectionStatus {
  projection: string;
  checkpoint: { transactionId: string; position: number; updatedAt: Date; eventsApplied: number };
  /**
   * On Citus: the projector reads each session's events by seq from the projection's heads,
   * and the checkpoint's transaction id and position stay at 0 (see docs/scale-out.md).
   */
  distributed: boolean;
  /** The version of the projection's fold that wrote its tables (see `Projection.version`). */
  version: number;
  behind: { events: number; seconds: number };
  leader: { owner: string; epoch: number; expiresAt: Date; live: boolean } | null;
  lastError: { message: string; at: Date | null } | null;
  /** Unreadable events set aside (`--skip-invalid`). */
  skippedEvents: number;
  /** Sessions the projection is stopped at: at an event it cannot read, a hole in their log, or where its SQL failed on their events. */
  blockedSessions: number;
  /** The first of them, oldest first (all are in the view `os_blocked_sessions`). */
  blocked: BlockedSession[];
  /** Set when committed events wait behind an older open transaction. */
  horizonHeldBy: HorizonHolder | null;
  /** Set when the projection as a whole cannot advance: see {@link projectionHalt}. */
  halted: ProjectionHalt | null;
}

/** Why a projection is halted, and since when. */
export interface ProjectionHalt {
  reason: string;
  since: Date | null;
}

/**
 * Whether a projection is halted: its last error is newer than its last progress (every batch
 * that succeeds clears it), so no session advances: its daemon retries a batch that keeps
 * failing, or `project --once` failed. Stopped sessions do not halt it: every other session
 * goes on (they are counted in `blockedSessions`).
 *
 * @example
 * ```ts
 * const halt = projectionHalt(await readProjectionStatus(db, projection.name));
 * if (halt) alert(`${projection.name} halted since ${halt.since?.toISOString()}: ${halt.reason}`);
 * ```
 */
export function projectionHalt(status: Pick<ProjectionStatus, 'lastError'>): ProjectionHalt | null {
  return status.lastError === null ? null : { reason: status.lastError.message, since: status.lastError.at };
}

/**
 * Reads a projection's status.
 *
 * @example
 * ```ts
 * const status = await readProjectionStatus(db, projection.name);
 * if (status.horizonHeldBy) console.log(`held back by pid ${status.horizonHeldBy.pid}`);
 * ```
 */
export async function readProjectionStatus(db: Kysely<DB>, projection: string): Promise<ProjectionStatus> {
  // The backlog as the view os_projection_lag defines it, for dashboards and for this status alike.
  const checkpoint = await db
    .selectFrom('projection_checkpoints as c')
    .innerJoin('os_projection_lag as l', 'l.projection', 'c.projection')
    .select([sql<string>`c.transaction_id::text`.as('transaction_id'), 'c.position', 'c.updated_at', 'c.events_applied', 'c.last_error', 'c.last_error_at', 'c.version'])
    .select(['l.lag_events', 'l.lag_seconds'])
    .where('c.projection', '=', projection)
    .executeTakeFirst();
  if (checkpoint === undefined) throw new Error(`projection ${projection} is not registered in this database: run os-audit migrate (with the same projections)`);
  const behind = { events: checkpoint.lag_events ?? 0, seconds: checkpoint.lag_seconds ?? 0 };

  const lease = await db
    .selectFrom('projection_leases')
    .select(['owner', 'epoch', 'expires_at', sql<boolean>`expires_at > clock_timestamp()`.as('live')])
    .where('projection', '=', projection)
    .executeTakeFirst();

  const skipped = await db
    .selectFrom('projection_errors')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('projection', '=', projection)
    .executeTakeFirstOrThrow();

  const blocked = await db
    .selectFrom('projection_blocked_sessions')
    .select(['session_id', 'seq', 'kind', 'reason', 'problem', 'blocked_at', sql<number>`count(*) OVER ()`.as('total')])
    .where('projection', '=', projection)
    .orderBy('blocked_at')
    .orderBy('session_id')
    .limit(BLOCKED_LISTED)
    .execute();

  // On Citus the projector reads by seq: no transaction holds events back.
  const distributed = await storeIsDistributed(db);
  const heldBack = behind.events > 0 && !distributed && (await backlogWaitsForOpenTransaction(db, checkpoint));
  const lastError = checkpoint.last_error ? { message: checkpoint.last_error, at: checkpoint.last_error_at } : null;
  return {
    projection,
    checkpoint: {
      transactionId: checkpoint.transaction_id,
      position: checkpoint.position,
      updatedAt: checkpoint.updated_at,
      eventsApplied: checkpoint.events_applied,
    },
    distributed,
    version: checkpoint.version,
    behind,
    leader: lease ? { owner: lease.owner, epoch: lease.epoch, expiresAt: lease.expires_at, live: lease.live } : null,
    lastError,
    skippedEvents: exactInteger(skipped.n),
    blockedSessions: blocked[0]?.total ?? 0,
    blocked: blocked.map((row) => ({ sessionId: row.session_id, seq: row.seq, kind: row.kind, reason: row.reason, problem: row.problem, since: row.blocked_at })),
    horizonHeldBy: heldBack ? await findHorizonHolder(db) : null,
    halted: projectionHalt({ lastError }),
  };
}

/** True when some event after the checkpoint is at or above the horizon: an older transaction is still open. */
async function backlogWaitsForOpenTransaction(db: Kysely<DB>, after: { transaction_id: string; position: number }): Promise<boolean> {
  const { rows } = await sql<{ held_back: boolean }>`
    SELECT EXISTS (
      SELECT FROM session_events
      WHERE (transaction_id, position) > (${after.transaction_id}::xid8, ${after.position}::bigint)
        AND transaction_id >= pg_snapshot_xmin(pg_current_snapshot())) AS held_back`.execute(db);
  return rows[0]!.held_back;
}

/**
 * The oldest transaction still open on the server (any database): the one that holds the horizon.
 * A role without pg_read_all_stats sees another user's pid, database, application and xid, but
 * not its state, age or query (null, and `<insufficient privilege>`).
 */
async function findHorizonHolder(db: Kysely<DB>): Promise<HorizonHolder | null> {
  const { rows } = await sql<HorizonHolder & { age: number }>`
    SELECT * FROM (
      SELECT pid, datname AS database, application_name AS application, state,
             extract(epoch FROM now() - xact_start)::float8 AS "transactionAgeSeconds",
             left(query, 200) AS query, NULL::text AS "preparedTransaction", age(backend_xid) AS age
      FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid()
      UNION ALL
      SELECT NULL, database, NULL, 'prepared', extract(epoch FROM now() - prepared)::float8, NULL, gid, age(transaction)
      FROM pg_prepared_xacts
    ) AS open_transactions
    ORDER BY age DESC LIMIT 1`.execute(db);
  if (rows[0] === undefined) return null;
  const { age: _age, ...holder } = rows[0];
  return holder;
}
