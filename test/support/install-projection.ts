import type { Kysely } from 'kysely';
import type { DB } from '../../src/db/schema.js';
import type { Projection } from '../../src/projector/projection.js';

/**
 * Makes a projection ready to project on a database `migrateToLatest` migrated: its own
 * migrations applied in key order, and its checkpoint, in one transaction. Until the engine
 * does both itself (`os-audit migrate` with the projection registered).
 *
 * @example
 * ```ts
 * await installProjection(testDb.db, osSnapshotV0260Projection);
 * await new Projector(testDb.db, osSnapshotV0260Projection).catchUp();
 * ```
 */
export async function installProjection(db: Kysely<DB>, projection: Projection): Promise<void> {
  await db.transaction().execute(async (trx) => {
    // TODO(engine): the engine's own migration of a projection's migrations (recorded as NAME/KEY) in place of this loop.
    for (const key of Object.keys(projection.migrations).sort()) await projection.migrations[key]!.up(trx);
    // TODO(engine): the engine's registration of the projection (its checkpoint row, its grants) in place of this insert.
    await trx.insertInto('projection_checkpoints').values({ projection: projection.name }).execute();
  });
}
