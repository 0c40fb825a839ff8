import { type Kysely, sql } from 'kysely';
import type { DB } from '../../src/db/schema.js';

/** The connection string of `url`'s database, as another user. */
export function connectionUrlAs(url: string, user: string, password: string): string {
  const as = new URL(url);
  as.username = user;
  as.password = password;
  return as.toString();
}

/**
 * Drops a login user once its sessions have ended: a closed connection's backend lingers for a
 * moment, and with it the temporary objects (the projector's batch table) the user owns.
 */
export async function dropLoginUser(db: Kysely<DB>, user: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await sql`SELECT FROM pg_stat_activity WHERE usename = ${user}`.execute(db);
    if (rows.length === 0) break;
    if (Date.now() > deadline) throw new Error(`sessions of ${user} did not end`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await sql`DROP ROLE IF EXISTS ${sql.id(user)}`.execute(db);
}
