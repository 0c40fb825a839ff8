import { type Kysely, type MigrationResultSet, type MigrationResult, Migrator, sql } from 'kysely';
import { migrations } from '../../migrations/index.js';
import { poolOf } from './open-database.js';
import { withPinnedConnection } from './pinned-connection.js';

/** kysely's migration lock: ours takes the same one, so that it also waits for a kysely-run migration. */
const MIGRATION_LOCK_ID = '3853314791062309107';

/** Thrown when a migration fails; the ones that ran before it stay applied. */
export class MigrationError extends Error {
  constructor(
    message: string,
    readonly results: readonly MigrationResult[],
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'MigrationError';
  }
}

/**
 * Brings the schema to the latest migration; a second run applies nothing. Concurrent callers
 * are serialized by the migration lock, which a database from `openDatabase` takes for the
 * migration's transaction: so it also works through a pooler in transaction mode (PgBouncer).
 *
 * @example
 * ```ts
 * const applied = await migrateToLatest(db);
 * console.log(applied.length ? `applied ${applied.join(', ')}` : 'already up to date');
 * ```
 * @returns the names of the migrations this call applied
 */
export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  const { error, results = [] } = poolOf(db) === undefined ? await migrator(db, false).migrateToLatest() : await migrateInOneTransaction(db);
  if (error) {
    const failed = results.find((result) => result.status === 'Error')?.migrationName ?? 'unknown';
    throw new MigrationError(`migration ${failed} failed: ${describe(error)}`, results, { cause: error });
  }
  return results.filter((result) => result.status === 'Success').map((result) => result.migrationName);
}

function migrator(db: Kysely<any>, disableTransactions: boolean): Migrator {
  return new Migrator({ db, provider: { getMigrations: async () => migrations }, disableTransactions });
}

/**
 * Every migration, and kysely's own tables, in one transaction that takes the migration lock
 * first, for itself. kysely's lock is a session-level advisory lock, taken and released in
 * statements of their own: behind a pooler in transaction mode those land on any server
 * connection, the lock serializes nothing and is left held on one of them.
 */
async function migrateInOneTransaction(db: Kysely<any>): Promise<MigrationResultSet> {
  return withPinnedConnection(db, async ({ client, db: connection }) => {
    await client.query('BEGIN');
    try {
      await sql`SELECT pg_advisory_xact_lock(${sql.lit(MIGRATION_LOCK_ID)}::bigint)`.execute(connection);
      const resultSet = await migrator(connection, true).migrateToLatest();
      await client.query(resultSet.error === undefined ? 'COMMIT' : 'ROLLBACK');
      return resultSet;
    } catch (error) {
      // A connection that failed is closed, not given back with the transaction open.
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
  });
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
