import { type RawBuilder, sql } from 'kysely';

/**
 * Takes the lease with the next epoch, the fencing token every checkpoint move is checked
 * against: when it is free or expired (or does not exist yet), or with `seize` whoever holds
 * it (a rebuild). No row when another owner holds it and `seize` is false.
 */
export function acquireLeaseSql(projection: string, owner: string, ttlMs: number, seize = false): RawBuilder<{ epoch: number }> {
  return sql`
    INSERT INTO projection_leases AS l (projection, owner, epoch, acquired_at, expires_at)
    VALUES (${projection}, ${owner}, 1, clock_timestamp(), clock_timestamp() + ${ttlMs} * interval '1 millisecond')
    ON CONFLICT (projection) DO UPDATE
      SET owner = excluded.owner, epoch = l.epoch + 1, acquired_at = excluded.acquired_at, expires_at = excluded.expires_at
      WHERE ${seize} OR l.expires_at <= clock_timestamp()
    RETURNING epoch`;
}

/**
 * Extends the lease while it is still this owner's and unexpired. Inside a batch's transaction
 * it also locks the lease row, so that no one can take it over until the batch commits.
 */
export function renewLeaseSql(projection: string, owner: string, epoch: number, ttlMs: number): RawBuilder<{ epoch: number }> {
  return sql`
    UPDATE projection_leases
    SET expires_at = clock_timestamp() + ${ttlMs} * interval '1 millisecond'
    WHERE projection = ${projection} AND owner = ${owner} AND epoch = ${epoch} AND expires_at > clock_timestamp()
    RETURNING epoch`;
}

/** Gives the lease up (it expires now), so that a standby takes over at once. */
export function releaseLeaseSql(projection: string, owner: string, epoch: number): RawBuilder<unknown> {
  return sql`
    UPDATE projection_leases SET expires_at = clock_timestamp()
    WHERE projection = ${projection} AND owner = ${owner} AND epoch = ${epoch}`;
}

/** The lease's owner while it is live; no row when it is free or has expired. */
export function leaseHolderSql(projection: string): RawBuilder<{ owner: string }> {
  return sql`SELECT owner FROM projection_leases WHERE projection = ${projection} AND expires_at > clock_timestamp()`;
}
