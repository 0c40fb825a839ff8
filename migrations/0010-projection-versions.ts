import { type Kysely, sql } from 'kysely';

/**
 * Projections are plug-ins (`Projection` values, each with its own migrations), registered by
 * `os-audit migrate` rather than by a migration of their own: each checkpoint row now records
 * the version of the fold that wrote its projection's tables. The projector folds on only while
 * it is the version it runs; a new version of a fold needs `os-audit rebuild --projection NAME`.
 * Projections registered before are at version 1.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE projection_checkpoints ADD COLUMN version integer NOT NULL DEFAULT 1`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE projection_checkpoints DROP COLUMN version`.execute(db);
}
