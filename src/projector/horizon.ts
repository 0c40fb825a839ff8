/**
 * The projector's horizon: it reads only events of transactions older than every transaction
 * still in progress (on the whole server).
 *
 * @example
 * ```ts
 * const limit = await currentTransactionLimit(db);
 * // … later: everything committed before `limit` was read can now be projected
 * if (await horizonHasPassed(db, limit)) done();
 * ```
 *
 * @module
 */

import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';

/** Every transaction id below this had started when it was read. */
export async function currentTransactionLimit(db: Kysely<DB>): Promise<string> {
  const { rows } = await sql<{ limit: string }>`SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS limit`.execute(db);
  return rows[0]!.limit;
}

/** True once no transaction below `limit` is still open: all it wrote is below the horizon. */
export async function horizonHasPassed(db: Kysely<DB>, limit: string): Promise<boolean> {
  const { rows } = await sql<{ passed: boolean }>`
    SELECT pg_snapshot_xmin(pg_current_snapshot()) >= ${limit}::xid8 AS passed`.execute(db);
  return rows[0]!.passed;
}
