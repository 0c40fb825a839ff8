import type { Kysely } from 'kysely';
import { builtInProjections } from '../../projections/index.js';
import { migratorOf } from '../../src/db/migrate.js';
import { allMigrations } from '../../src/projector/migrate-projections.js';

/**
 * Migrates `db` up (or down) to the migration `name`, inclusive: for tests of a migration in
 * the schema of its own time, before later ones changed it.
 */
export async function migrateTo(db: Kysely<any>, name: string): Promise<void> {
  const { error } = await migratorOf(db, allMigrations(builtInProjections)).migrateTo(name);
  if (error) throw error;
}
