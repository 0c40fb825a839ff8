import { CompiledQuery, type Kysely } from 'kysely';
import type pg from 'pg';
import type { DB } from '../db/schema.js';
import { SEALED_EVENTS_BY_INDEX } from '../stored-log/sealed-events.js';

/**
 * The one connection a projection's batches run on. The daemon's commits each statement alone.
 * A rebuild's is inside an open transaction: a statement that fails there is undone to a
 * savepoint, so that the transaction goes on.
 *
 * @example
 * ```ts
 * await withPinnedConnection(db, ({ client }) => runBatchStoppingFailures(db, projection, held, options, pgClientConnection(client)));
 * await db.transaction().execute((trx) => runBatchStoppingFailures(trx, projection, held, options, kyselyConnection(trx, { inTransaction: true })));
 * ```
 */
export interface BatchConnection {
  /** Runs one statement; `name` prepares it once per connection where the driver allows. */
  query<R>(text: string, values: readonly unknown[], name?: string): Promise<R[]>;
  readonly inTransaction: boolean;
}

/**
 * A pg client outside a transaction: named statements are prepared once and planned once. With
 * `unnamed`, inside a transaction, and every statement parsed afresh (a pooler in
 * transaction mode shares server connections, and what one client prepared meets the others).
 */
export function pgClientConnection(client: pg.ClientBase, options: { unnamed?: boolean } = {}): BatchConnection {
  return {
    inTransaction: options.unnamed ?? false,
    query: async <R>(text: string, values: readonly unknown[], name?: string) =>
      (await client.query<R & pg.QueryResultRow>({ name: options.unnamed ? undefined : name, text, values: [...values] })).rows,
  };
}

/** Whether the server connections under a projector's pool are its own, or a pooler's to share. */
export interface ServerConnections {
  /** Set once a statement prepared on one of our connections was missing, or already there. */
  shared: boolean;
}

/** Clients set up for batches: no JIT (a batch is planned cheap and runs once), sealed events found by index. */
const readyClients = new WeakSet<pg.ClientBase>();

/**
 * Runs `work` (a batch) on `client`, a connection of a pool. Each statement commits alone,
 * named ones are prepared once, JIT is off and sealed events are found by index
 * ({@link SEALED_EVENTS_BY_INDEX}).
 *
 * Behind a pooler in transaction mode (PgBouncer), each transaction may land on a server
 * connection other clients share. A named statement is then missing there (26000), or another
 * client prepared it already (42P05). From the first such error on, `connections.shared` is set.
 * Each batch then runs as one transaction of unnamed statements, with the settings for it
 * alone, so nothing is left on a server connection. The batch that failed runs again so: its
 * failed statement changed nothing.
 *
 * @example
 * ```ts
 * const connections = { shared: false };
 * await withPinnedConnection(db, ({ client }) => onPoolClient(client, connections, (connection) => runBatchStoppingFailures(db, projection, held, options, connection)));
 * ```
 */
export async function onPoolClient<T>(client: pg.ClientBase, connections: ServerConnections, work: (connection: BatchConnection) => Promise<T>): Promise<T> {
  if (!connections.shared) {
    try {
      if (!readyClients.has(client)) {
        await client.query(`SET jit = off; SET ${SEALED_EVENTS_BY_INDEX}`);
        readyClients.add(client);
      }
      return await work(pgClientConnection(client));
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code !== '26000' && code !== '42P05') throw error;
      connections.shared = true;
    }
  }
  await client.query(`BEGIN; SET LOCAL jit = off; SET LOCAL ${SEALED_EVENTS_BY_INDEX}`);
  try {
    const result = await work(pgClientConnection(client, { unnamed: true }));
    await client.query('COMMIT');
    return result;
  } catch (error) {
    // A connection that failed is closed by the pool, not given back in the transaction.
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

/** A Kysely bound to one connection: a transaction, or the callback of `db.connection()`. */
export function kyselyConnection(db: Kysely<DB>, options: { inTransaction: boolean }): BatchConnection {
  return {
    inTransaction: options.inTransaction,
    query: async <R>(text: string, values: readonly unknown[]) => (await db.executeQuery<R>(CompiledQuery.raw(text, [...values]))).rows,
  };
}

/** `work`, whose statements are all undone if it fails, leaving the connection usable. */
export async function atomically<T>(connection: BatchConnection, work: () => Promise<T>): Promise<T> {
  if (!connection.inTransaction) return work();
  await connection.query('SAVEPOINT os_audit_batch', []);
  try {
    const result = await work();
    await connection.query('RELEASE SAVEPOINT os_audit_batch', []);
    return result;
  } catch (error) {
    await connection.query('ROLLBACK TO SAVEPOINT os_audit_batch; RELEASE SAVEPOINT os_audit_batch', []);
    throw error;
  }
}

/** `work`, whose statements are all undone whatever happens: a trial. */
export async function undone<T>(connection: BatchConnection, work: () => Promise<T>): Promise<T> {
  const [begin, end] = connection.inTransaction
    ? ['SAVEPOINT os_audit_trial', 'ROLLBACK TO SAVEPOINT os_audit_trial; RELEASE SAVEPOINT os_audit_trial']
    : ['BEGIN', 'ROLLBACK'];
  await connection.query(begin, []);
  try {
    return await work();
  } finally {
    await connection.query(end, []);
  }
}
