import { Kysely, PostgresDialect } from 'kysely';
import type pg from 'pg';
import { poolOf } from './open-database.js';
import type { DB } from './schema.js';

/** One connection of a pool, both as pg's client and as a typed database bound to it. */
export interface PinnedConnection {
  client: pg.PoolClient;
  /** Every query and transaction of this database runs on `client`. */
  db: Kysely<DB>;
}

const boundDatabases = new WeakMap<pg.PoolClient, Kysely<DB>>();
const driversStarted = new WeakSet<Kysely<DB>>();

/**
 * Runs `work` on one connection of the pool under `db` (from `openDatabase`), for what needs
 * the driver itself (a script of statements in one round trip, `COPY`) next to typed queries on
 * the same connection. A connection that failed is closed rather than returned to the pool;
 * `work` must leave no transaction open on it. `db` must have a pool of its own
 * (`poolOf(db)`), not be a transaction or a database made otherwise.
 *
 * @example
 * ```ts
 * await withPinnedConnection(db, async ({ client, db }) => {
 *   await db.transaction().execute(async (trx) => { ... });
 * });
 * ```
 */
export async function withPinnedConnection<T>(db: Kysely<DB>, work: (connection: PinnedConnection) => Promise<T>): Promise<T> {
  const pool = poolOf(db);
  if (pool === undefined) throw new Error('withPinnedConnection needs a database from openDatabase, not a transaction');
  if (!driversStarted.has(db)) {
    // kysely ends the pool on destroy() only if it has used it itself.
    await db.connection().execute(async () => {});
    driversStarted.add(db);
  }
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (error: Error) => (broken = error);
  client.on('error', onError);
  try {
    return await work({ client, db: boundDatabase(client) });
  } finally {
    client.off('error', onError);
    client.release(broken ?? leftInTransaction(client));
  }
}

/** A database whose only connection is `client`; kysely's release of it leaves it pinned. */
function boundDatabase(client: pg.PoolClient): Kysely<DB> {
  let bound = boundDatabases.get(client);
  if (bound === undefined) {
    const pinned = { query: client.query.bind(client), release: () => {} };
    const pool = { connect: async () => pinned, end: async () => {} };
    bound = new Kysely<DB>({ dialect: new PostgresDialect({ pool: pool as unknown as pg.Pool }) });
    boundDatabases.set(client, bound);
  }
  return bound;
}

/**
 * Why `client` must not go back to the pool: it is still inside a transaction, open or failed.
 * Work that met an error taken for a lost connection does not roll back. On Citus, a worker that
 * went away fails the statement with SQLSTATE 08 while this connection stays up. Closing the
 * connection ends the transaction, rather than the pool's next user meeting it.
 */
function leftInTransaction(client: pg.PoolClient): Error | undefined {
  const status = client.getTransactionStatus();
  return status === 'T' || status === 'E' ? new Error('the connection was left inside a transaction') : undefined;
}
