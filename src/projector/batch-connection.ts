import { CompiledQuery, type Kysely } from 'kysely';
import type pg from 'pg';
import type { DB } from '../db/schema.js';

/**
 * The one connection a projection's batches run on: on its own (the daemon: each statement
 * commits alone), or inside an open transaction (a rebuild), where a statement that fails
 * must be undone to a savepoint for the transaction to go on.
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

/** A pg client outside a transaction: named statements are prepared once and planned once. */
export function pgClientConnection(client: pg.ClientBase): BatchConnection {
  return {
    inTransaction: false,
    query: async <R>(text: string, values: readonly unknown[], name?: string) =>
      (await client.query<R & pg.QueryResultRow>({ name, text, values: [...values] })).rows,
  };
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
