import { type Kysely, type Migration, sql } from 'kysely';
import { migrations } from '../../migrations/index.js';
import { runMigrations } from '../db/migrate.js';
import type { Projection } from './projection.js';
import { registerProjections } from './register-projections.js';

/**
 * The engine's migrations, then each projection's, named `PROJECTION/KEY`: what
 * {@link migrateProjections} applies.
 *
 * @example
 * ```ts
 * Object.keys(allMigrations(builtInProjections)); // ['0001-event-store', …, 'os_snapshot_v0_2_60/0001-tables', …]
 * ```
 */
export function allMigrations(projections: readonly Projection[]): Record<string, Migration> {
  const all: Record<string, Migration> = { ...migrations };
  for (const projection of projections) {
    for (const [key, migration] of Object.entries(projection.migrations)) all[`${projection.name}/${key}`] = migration;
  }
  return all;
}

/**
 * The engine's migrations and each projection's, then the projections registered
 * (`registerProjections`), all in one transaction.
 *
 * @returns the names of the migrations this call applied
 */
export async function migrateProjections(db: Kysely<any>, projections: readonly Projection[]): Promise<string[]> {
  return runMigrations(db, {
    migrations: { ...(await otherProjectionsMigrations(db, projections)), ...allMigrations(projections) },
    afterMigrations: async (trx) => {
      try {
        await registerProjections(trx, projections);
      } catch (error) {
        throw new Error(`registering the projections failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      }
    },
  });
}

/**
 * Stand-ins for the migrations already applied of projections not in the list: kysely refuses
 * a list that lacks an applied migration, and a projection left out keeps its tables as they are.
 */
async function otherProjectionsMigrations(db: Kysely<any>, projections: readonly Projection[]): Promise<Record<string, Migration>> {
  const { rows: tables } = await sql<{ exists: boolean }>`SELECT to_regclass('kysely_migration') IS NOT NULL AS exists`.execute(db);
  if (!tables[0]!.exists) return {};
  const { rows } = await sql<{ name: string }>`SELECT name FROM kysely_migration WHERE name LIKE '%/%'`.execute(db);
  const listed = new Set(projections.map((projection) => projection.name));
  const applied = rows.filter(({ name }) => !listed.has(name.slice(0, name.indexOf('/'))));
  return Object.fromEntries(applied.map(({ name }) => [name, { up: async () => {} }]));
}
