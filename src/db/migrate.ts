import { type Kysely, type MigrationResult, Migrator } from 'kysely';
import { migrations } from '../../migrations/index.js';

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
 * are serialized by kysely's migration lock.
 *
 * @example
 * ```ts
 * const applied = await migrateToLatest(db);
 * console.log(applied.length ? `applied ${applied.join(', ')}` : 'already up to date');
 * ```
 * @returns the names of the migrations this call applied
 */
export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const { error, results = [] } = await migrator.migrateToLatest();
  if (error) {
    const failed = results.find((result) => result.status === 'Error')?.migrationName ?? 'unknown';
    throw new MigrationError(`migration ${failed} failed: ${describe(error)}`, results, { cause: error });
  }
  return results.filter((result) => result.status === 'Success').map((result) => result.migrationName);
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
