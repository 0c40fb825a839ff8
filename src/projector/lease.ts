import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { acquireLeaseSql, leaseHolderSql, releaseLeaseSql, renewLeaseSql } from './sql/lease-sql.js';

/** The lease was taken over (or expired): this projector must stop writing. */
export class LeaseLostError extends Error {
  constructor(projection: string, owner: string, epoch: number) {
    super(`projection ${projection}: ${owner} lost its lease (epoch ${epoch})`);
    this.name = 'LeaseLostError';
  }
}

/** A lease this owner holds, with the epoch that fences its writes. */
export interface HeldLease {
  owner: string;
  epoch: number;
}

/**
 * The single-writer lease of a projection: a row (owner, epoch, expiry) in
 * `projection_leases`, timed by the database's clock, so it works through connection poolers
 * and frees itself after a hard kill once it expires.
 */
export class Lease {
  constructor(
    private readonly db: Kysely<DB>,
    readonly projection: string,
    readonly owner: string,
    readonly ttlMs: number,
  ) {}

  /** Takes the lease if it is free or expired; `null` when another owner holds it. */
  async tryAcquire(): Promise<HeldLease | null> {
    const row = await acquireLeaseSql(this.projection, this.owner, this.ttlMs).execute(this.db);
    const epoch = row.rows[0]?.epoch;
    return epoch === undefined ? null : { owner: this.owner, epoch };
  }

  /** Takes the lease whoever holds it: the next epoch fences the previous holder out. */
  async seize(): Promise<HeldLease> {
    const row = await acquireLeaseSql(this.projection, this.owner, this.ttlMs, true).execute(this.db);
    return { owner: this.owner, epoch: row.rows[0]!.epoch };
  }

  /** Extends the lease; throws {@link LeaseLostError} when it is no longer this owner's. */
  async renew(held: HeldLease): Promise<void> {
    const row = await renewLeaseSql(this.projection, held.owner, held.epoch, this.ttlMs).execute(this.db);
    if (row.rows.length === 0) throw new LeaseLostError(this.projection, held.owner, held.epoch);
  }

  async release(held: HeldLease): Promise<void> {
    await releaseLeaseSql(this.projection, held.owner, held.epoch).execute(this.db);
  }

  /** Who holds the lease now, `undefined` when no one does (it is free or has expired). */
  async holder(): Promise<string | undefined> {
    const row = await leaseHolderSql(this.projection).execute(this.db);
    return row.rows[0]?.owner;
  }
}
