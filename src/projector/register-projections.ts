import { type Kysely, sql } from 'kysely';
import type { Projection } from './projection.js';

/** The group roles of migration 0005: who reads the snapshots, and who runs the projector. */
const READER_ROLE = 'os_audit_reader';
const PROJECTOR_ROLE = 'os_audit_projector';

/**
 * Makes each projection known to the database once its migrations have run: its checkpoint row
 * (at the start of the log, at its version) unless it has one, and the roles' grants on what it
 * declares: the reader role reads its tables and views, the projector role also writes its
 * tables and uses their sequences. Each statement may run again: `migrate` runs them every time.
 *
 * @example
 * ```ts
 * await registerProjections(trx, builtInProjections); // as `os-audit migrate` does after the migrations
 * ```
 */
export async function registerProjections(db: Kysely<any>, projections: readonly Projection[]): Promise<void> {
  for (const projection of projections) {
    await sql`
      INSERT INTO projection_checkpoints (projection, version) VALUES (${projection.name}, ${projection.version})
      ON CONFLICT (projection) DO NOTHING`.execute(db);
    const reader = sql.id(READER_ROLE);
    const projector = sql.id(PROJECTOR_ROLE);
    const tables = sql.join(projection.tables.map((table) => sql.table(table)));
    await sql`GRANT SELECT ON ${tables} TO ${reader}`.execute(db);
    await sql`GRANT SELECT, INSERT, UPDATE, DELETE ON ${tables} TO ${projector}`.execute(db);
    if (projection.views.length > 0) {
      await sql`GRANT SELECT ON ${sql.join(projection.views.map((view) => sql.table(view)))} TO ${reader}, ${projector}`.execute(db);
    }
    const { rows: sequences } = await sql<{ sequence: string }>`
      SELECT d.objid::regclass::text AS sequence FROM pg_depend AS d JOIN pg_class AS c ON c.oid = d.objid
      WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass AND c.relkind = 'S'
        AND d.refobjid = ANY (${projection.tables}::regclass[])`.execute(db);
    if (sequences.length > 0) {
      await sql`GRANT USAGE ON SEQUENCE ${sql.join(sequences.map(({ sequence }) => sql.raw(sequence)))} TO ${projector}`.execute(db);
    }
  }
}
