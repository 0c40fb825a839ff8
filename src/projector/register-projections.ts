import { type Kysely, sql } from 'kysely';
import { storeIsDistributed } from '../db/distributed-store.js';
import type { Projection } from './projection.js';
import { batchTableOf, createBatchTableSql } from './sql/session-batch-sql.js';

/** The group roles of migration 0005: who reads the snapshots, and who runs the projector. */
export const READER_ROLE = 'os_audit_reader';
export const PROJECTOR_ROLE = 'os_audit_projector';

/**
 * Makes each projection known to the database once its migrations have run. It gets its
 * checkpoint row (at the start of the log, at its version) unless it has one. The reader role
 * may read its tables and views; the projector role also writes its tables and uses their
 * sequences. On Citus its tables with a `session_id` are distributed by it, colocated with the
 * store's. Each statement may run again: `migrate` runs them every time.
 *
 * @example
 * ```ts
 * await registerProjections(trx, builtInProjections); // as `os-audit migrate` does after the migrations
 * ```
 */
export async function registerProjections(db: Kysely<any>, projections: readonly Projection[]): Promise<void> {
  const distributed = await storeIsDistributed(db);
  for (const projection of projections) {
    await sql`
      INSERT INTO projection_checkpoints (projection, version) VALUES (${projection.name}, ${projection.version})
      ON CONFLICT (projection) DO NOTHING`.execute(db);
    if (distributed) await distributeTables(db, projection);
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

/**
 * Distributes each of the projection's tables with a `session_id` column that is not
 * distributed yet, colocated with `sessions`, and (re)creates its batch table when its columns
 * are not the projection's reads (`createBatchTableSql`).
 */
async function distributeTables(db: Kysely<any>, projection: Projection): Promise<void> {
  const batchTable = batchTableOf(projection);
  const expected = createBatchTableSql(projection).compile(db).sql;
  const { rows } = await sql<{ definition: string | null }>`
    SELECT obj_description(to_regclass(${batchTable}), 'pg_class') AS definition`.execute(db);
  if (rows[0]?.definition !== expected) {
    for (const statement of batchTableStatements(db, projection).slice(0, -1)) await sql.raw(statement).execute(db);
  }
  await sql`UPDATE projection_checkpoints SET session_heads = ${projection.sessionHeads} WHERE projection = ${projection.name}`.execute(db);
  const tables = [...projection.tables, batchTable];
  await sql`SET LOCAL citus.enable_unsafe_triggers = on`.execute(db);
  await sql`
    SELECT create_distributed_table(c.oid::regclass, 'session_id', colocate_with => 'sessions')
    FROM pg_class AS c
    WHERE c.oid = ANY (${tables}::regclass[])
      AND EXISTS (SELECT FROM pg_attribute WHERE attrelid = c.oid AND attname = 'session_id' AND NOT attisdropped)
      AND NOT EXISTS (SELECT FROM citus_tables WHERE table_name = c.oid::regclass)`.execute(db);
}

/**
 * The statements that (re)create the projection's batch table on Citus, to run in order in one
 * transaction. They drop it, create it (`createBatchTableSql`), and note the definition it was
 * made by, so that the next migrate knows whether the reads changed. Then they grant it to the
 * projector role and distribute it by `session_id`, colocated with `sessions`; migrate leaves
 * out that last one and distributes it with the projection's tables. `migrate` runs them when
 * the definition changed; a batch that finds the table missing runs them before it tries again.
 */
export function batchTableStatements(db: Kysely<any>, projection: Projection): string[] {
  const table = sql.table(batchTableOf(projection));
  const create = createBatchTableSql(projection).compile(db).sql;
  return [
    sql`DROP TABLE IF EXISTS ${table}`,
    sql.raw(create),
    sql`COMMENT ON TABLE ${table} IS ${sql.lit(create)}`,
    sql`GRANT SELECT, INSERT, UPDATE, DELETE ON ${table} TO ${sql.id(PROJECTOR_ROLE)}`,
    sql`SELECT create_distributed_table(${sql.lit(batchTableOf(projection))}::regclass, 'session_id', colocate_with => 'sessions')`,
  ].map((statement) => statement.compile(db).sql);
}
