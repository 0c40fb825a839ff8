import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';

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

/** What `os-audit status` shows: how far a projection is, who writes it, what holds it back. */
export interface ProjectionStatus {
  projection: string;
  checkpoint: { transactionId: string; position: number; updatedAt: Date; eventsApplied: number };
  behind: { events: number; seconds: number };
  leader: { owner: string; epoch: number; expiresAt: Date; live: boolean } | null;
  lastError: { message: string; at: Date | null } | null;
  skippedEvents: number;
  /** Set when committed events wait behind an older open transaction. */
  horizonHeldBy: HorizonHolder | null;
}

/**
 * Reads a projection's status.
 *
 * @example
 * ```ts
 * const status = await readProjectionStatus(db, 'os_snapshot');
 * if (status.horizonHeldBy) console.log(`held back by pid ${status.horizonHeldBy.pid}`);
 * ```
 */
export async function readProjectionStatus(db: Kysely<DB>, projection: string): Promise<ProjectionStatus> {
  const checkpoint = await db
    .selectFrom('projection_checkpoints')
    .select([sql<string>`transaction_id::text`.as('transaction_id'), 'position', 'updated_at', 'events_applied', 'last_error', 'last_error_at'])
    .where('projection', '=', projection)
    .executeTakeFirstOrThrow();

  const { rows: backlog } = await sql<{ events: number; seconds: number | null; held_back: boolean }>`
    SELECT count(*)::bigint AS events,
           extract(epoch FROM now() - min(recorded_at))::float8 AS seconds,
           coalesce(bool_or(transaction_id >= pg_snapshot_xmin(pg_current_snapshot())), false) AS held_back
    FROM session_events
    WHERE (transaction_id, position) > (${checkpoint.transaction_id}::xid8, ${checkpoint.position}::bigint)`.execute(db);

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

  const behind = backlog[0]!;
  return {
    projection,
    checkpoint: {
      transactionId: checkpoint.transaction_id,
      position: checkpoint.position,
      updatedAt: checkpoint.updated_at,
      eventsApplied: checkpoint.events_applied,
    },
    behind: { events: Number(behind.events), seconds: behind.events > 0 ? Math.max(0, behind.seconds ?? 0) : 0 },
    leader: lease ? { owner: lease.owner, epoch: lease.epoch, expiresAt: lease.expires_at, live: lease.live } : null,
    lastError: checkpoint.last_error ? { message: checkpoint.last_error, at: checkpoint.last_error_at } : null,
    skippedEvents: Number(skipped.n),
    horizonHeldBy: behind.held_back ? await findHorizonHolder(db) : null,
  };
}

/** The oldest transaction still open on the server (any database): the one that holds the horizon. */
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
