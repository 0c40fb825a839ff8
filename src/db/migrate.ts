import { type Kysely, type Migration, type MigrationResultSet, type MigrationResult, Migrator, sql } from 'kysely';
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

/** What {@link runMigrations} applies, and what it does once they all ran, in the same transaction. */
export interface MigrationPlan {
  /** Every migration by name, applied in name order where not applied yet (kysely's `Migrator`). */
  migrations: Readonly<Record<string, Migration>>;
  /** Runs after the migrations, in their transaction: a failure undoes them. */
  afterMigrations?: (db: Kysely<any>) => Promise<void>;
}

/**
 * Applies the plan's migrations that have not run, then its `afterMigrations`; a second run
 * applies nothing. Concurrent callers are serialized by the migration lock. A database from
 * `openDatabase` takes it for the migration's transaction, so it also works through a pooler in
 * transaction mode (PgBouncer).
 *
 * @returns the names of the migrations this call applied
 */
export async function runMigrations(db: Kysely<any>, plan: MigrationPlan): Promise<string[]> {
  const { error, results = [] } = poolOf(db) === undefined ? await migrateAndFinish(db, plan, false) : await migrateInOneTransaction(db, plan);
  if (error instanceof MigrationError) throw error;
  if (error) {
    const failed = results.find((result) => result.status === 'Error')?.migrationName;
    throw new MigrationError(failed === undefined ? describeSetupFailure(error) : `migration ${failed} failed: ${describe(error)}`, results, { cause: error });
  }
  return results.filter((result) => result.status === 'Success').map((result) => result.migrationName);
}

/**
 * A kysely `Migrator` of the migrations. Unordered migrations are allowed: a projection added
 * later, or an engine migration newer than a projection's, runs in its turn.
 *
 * @example
 * ```ts
 * await migratorOf(db, allMigrations(builtInProjections)).migrateTo('0006-batch-requirements'); // a test's schema of that time
 * ```
 */
export function migratorOf(db: Kysely<any>, migrations: Readonly<Record<string, Migration>>, disableTransactions = false): Migrator {
  return new Migrator({ db, provider: { getMigrations: async () => ({ ...migrations }) }, disableTransactions, allowUnorderedMigrations: true });
}

/** The migrations, then the plan's `afterMigrations` (when they all ran). */
async function migrateAndFinish(db: Kysely<any>, plan: MigrationPlan, disableTransactions: boolean): Promise<MigrationResultSet> {
  const resultSet = await migratorOf(db, plan.migrations, disableTransactions).migrateToLatest();
  if (resultSet.error !== undefined || plan.afterMigrations === undefined) return resultSet;
  try {
    await plan.afterMigrations(db);
  } catch (error) {
    return { ...resultSet, error: new MigrationError(describe(error), resultSet.results ?? [], { cause: error }) };
  }
  return resultSet;
}

/**
 * Every migration, and kysely's own tables, in one transaction that takes the migration lock
 * first, for itself. kysely's lock is a session-level advisory lock, taken and released in
 * statements of their own: behind a pooler in transaction mode those land on any server
 * connection, the lock serializes nothing and is left held on one of them.
 */
async function migrateInOneTransaction(db: Kysely<any>, plan: MigrationPlan): Promise<MigrationResultSet> {
  return withPinnedConnection(db, async ({ client, db: connection }) => {
    await client.query('BEGIN');
    try {
      await sql`SELECT pg_advisory_xact_lock(${sql.lit(MIGRATION_LOCK_ID)}::bigint)`.execute(connection);
      const resultSet = await migrateAndFinish(connection, plan, true);
      await client.query(resultSet.error === undefined ? 'COMMIT' : 'ROLLBACK');
      if (resultSet.error !== undefined && !(resultSet.error instanceof MigrationError) && !resultSet.results?.some((result) => result.status === 'Error')) {
        // kysely looks again whether its table exists after failing to create it: in our
        // transaction that look fails too, and hides the reason (a privilege). Asked only now,
        // so that a migration that works costs no query more.
        const denied = await missingCreatePrivilege(connection);
        if (denied !== undefined) return { ...resultSet, error: new Error(denied) };
      }
      return resultSet;
    } catch (error) {
      // A connection that failed is closed, not given back with the transaction open.
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
  });
}

/** Why the current user cannot create kysely's migration table, when it is missing and that is so. */
async function missingCreatePrivilege(db: Kysely<any>): Promise<string | undefined> {
  const { rows } = await sql<{ allowed: boolean; role: string; schema: string | null }>`
    SELECT to_regclass('kysely_migration') IS NOT NULL
           OR coalesce(has_schema_privilege(current_schema(), 'CREATE'), false) AS allowed,
           current_user AS role, current_schema() AS schema`.execute(db);
  const { allowed, role, schema } = rows[0]!;
  if (allowed) return undefined;
  if (schema === null) return `role ${role} has no schema to create os-audit's tables in (its search_path names none that exists)`;
  return `role ${role} may not create tables in schema ${schema}: migrate as the database's owner, or GRANT CREATE ON SCHEMA ${schema} TO ${role}`;
}

/** What failed when no migration did: kysely's own tables and checks. */
function describeSetupFailure(error: unknown): string {
  const message = describe(error);
  const missing = /^corrupted migrations: previously executed migration (.+) is missing$/.exec(message);
  if (missing) return `this database was migrated by a newer os-audit (its migration ${missing[1]} is unknown to this one): upgrade os-audit`;
  return `migrating failed before any migration ran: ${message}`;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
