import { type Kysely, type RawBuilder, sql } from 'kysely';
import { madeOsSnapshotTables } from './0002-os-snapshot-projection.js';

/** Reads the snapshot tables and the dashboard views: nothing else. */
const READER_ROLE = 'os_audit_reader';
/** Appends events (`os-audit append`, `os-audit import`, `EventStore`); changes nothing stored. */
const WRITER_ROLE = 'os_audit_writer';
/** Runs the projector: reads the log, writes the snapshot tables and its own bookkeeping. */
const PROJECTOR_ROLE = 'os_audit_projector';

const SNAPSHOT_TABLES = ['os_snapshots', 'os_processes', 'os_signals', 'os_budget_exceeded'];
const SNAPSHOT_VIEWS = [
  'os_snapshot_json',
  'os_session_overview',
  'os_process_states',
  'os_processes_by_state',
  'os_suspended_sessions',
  'os_signal_dispositions',
  'os_budget_events',
];
const ENGINE_VIEWS = ['os_event_activity', 'os_projection_lag'];
const PROBLEM_FUNCTIONS = [
  sql`os_snapshot_event_problem(text, jsonb)`,
  sql`os_audit_u32_problem(jsonb, text)`,
  sql`os_audit_string_problem(jsonb, text, boolean)`,
  sql`os_audit_string_list_problem(jsonb, text)`,
];

/**
 * Group roles (NOLOGIN) for least-privilege access; login users are made members of them.
 * Roles belong to the server, privileges to each database: the roles are created when missing
 * (several databases of one server may migrate at the same time), the grants made here.
 *
 * - `os_audit_reader`: SELECT on the snapshot tables and the views; not the log, no writes.
 * - `os_audit_writer`: appends. SELECT and INSERT of the columns os-audit writes on
 *   `session_events` (never `position`, `transaction_id` or `recorded_at`, which the database
 *   sets), and on the `sessions` heads INSERT and UPDATE of `last_seq` and `last_recorded_at`.
 *   No UPDATE, DELETE or TRUNCATE of history (the triggers refuse those for every role anyway).
 * - `os_audit_projector`: reads the log, writes the snapshot tables, its checkpoint, lease and
 *   set-aside events, executes the snapshot's field checks, and may create the temporary
 *   batch table (TEMPORARY is granted explicitly, so that revoking it from PUBLIC is safe).
 *
 * A later migration that adds a table or a view grants on it itself. The OS snapshot's tables
 * and views are granted on here only where an earlier os-audit made them in 0002 and 0004;
 * elsewhere the projection's registration grants on them (`registerProjections`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await createGroupRolesSql([READER_ROLE, WRITER_ROLE, PROJECTOR_ROLE]).execute(db);
  const { database, schema } = await currentDatabaseAndSchema(db);
  const reader = sql.id(READER_ROLE);
  const writer = sql.id(WRITER_ROLE);
  const projector = sql.id(PROJECTOR_ROLE);
  const all = sql.join([reader, writer, projector]);
  // A database an earlier os-audit began holds the snapshot's tables and views already.
  const snapshot = await madeOsSnapshotTables(db);
  const snapshotTables = sql.join(SNAPSHOT_TABLES.map((table) => sql.table(table)));
  const views = sql.join([...(snapshot ? SNAPSHOT_VIEWS : []), ...ENGINE_VIEWS].map((view) => sql.table(view)));

  // Given to PUBLIC by default, granted explicitly so that a hardened database keeps working.
  await sql`GRANT CONNECT ON DATABASE ${sql.id(database)} TO ${all}`.execute(db);
  await sql`GRANT USAGE ON SCHEMA ${sql.id(schema)} TO ${all}`.execute(db);
  await sql`GRANT TEMPORARY ON DATABASE ${sql.id(database)} TO ${projector}`.execute(db);

  if (snapshot) await sql`GRANT SELECT ON ${snapshotTables} TO ${reader}`.execute(db);
  await sql`GRANT SELECT ON ${views} TO ${reader}`.execute(db);

  // Reading the log back: heads, a re-import's comparison with what is stored, `os-audit events`.
  await sql`GRANT SELECT ON session_events, sessions TO ${writer}`.execute(db);
  await sql`GRANT INSERT (session_id, seq, kind, turn, payload, payload_text, validated) ON session_events TO ${writer}`.execute(db);
  await sql`GRANT INSERT (session_id, last_seq), UPDATE (last_seq, last_recorded_at) ON sessions TO ${writer}`.execute(db);

  await sql`GRANT SELECT ON session_events, sessions, ${views} TO ${projector}`.execute(db);
  if (snapshot) await sql`GRANT SELECT, INSERT, UPDATE, DELETE ON ${snapshotTables} TO ${projector}`.execute(db);
  await sql`GRANT SELECT, UPDATE ON projection_checkpoints TO ${projector}`.execute(db);
  await sql`GRANT SELECT, INSERT, UPDATE ON projection_leases TO ${projector}`.execute(db);
  await sql`GRANT SELECT, INSERT, DELETE ON projection_errors TO ${projector}`.execute(db);
  await sql`GRANT EXECUTE ON FUNCTION ${sql.join(PROBLEM_FUNCTIONS)} TO ${projector}`.execute(db);
}

/** Takes back this database's grants; the roles stay, other databases of the server may use them. */
export async function down(db: Kysely<unknown>): Promise<void> {
  const { database, schema } = await currentDatabaseAndSchema(db);
  const all = sql.join([READER_ROLE, WRITER_ROLE, PROJECTOR_ROLE].map((role) => sql.id(role)));
  const snapshot = (await madeOsSnapshotTables(db)) ? [...SNAPSHOT_TABLES, ...SNAPSHOT_VIEWS] : [];
  const tables = [...snapshot, ...ENGINE_VIEWS, 'session_events', 'sessions', 'projection_checkpoints', 'projection_leases', 'projection_errors'];
  await sql`REVOKE ALL ON ${sql.join(tables.map((table) => sql.table(table)))} FROM ${all}`.execute(db);
  await sql`REVOKE ALL ON FUNCTION ${sql.join(PROBLEM_FUNCTIONS)} FROM ${all}`.execute(db);
  await sql`REVOKE ALL ON SCHEMA ${sql.id(schema)} FROM ${all}`.execute(db);
  await sql`REVOKE ALL ON DATABASE ${sql.id(database)} FROM ${all}`.execute(db);
}

/**
 * Creates each of these NOLOGIN roles unless it exists. A concurrent creator (another
 * database's migration) is tolerated; a migrator that may not create roles gets an error that
 * says what to do.
 *
 * @example
 * ```ts
 * await createGroupRolesSql(['os_audit_reader']).execute(db); // a no-op once the role exists
 * ```
 */
export function createGroupRolesSql(roles: readonly string[]): RawBuilder<unknown> {
  // DO takes no parameters: the names (constants of os-audit) are inlined as literals.
  const names = sql.join(roles.map((role) => sql.lit(role)));
  return sql`
    DO $$
    DECLARE
      role_name text;
    BEGIN
      FOREACH role_name IN ARRAY ARRAY[${names}]::text[] LOOP
        CONTINUE WHEN EXISTS (SELECT FROM pg_roles WHERE rolname = role_name);
        BEGIN
          EXECUTE format('CREATE ROLE %I NOLOGIN', role_name);
        EXCEPTION
          WHEN duplicate_object OR unique_violation THEN NULL;
          WHEN insufficient_privilege THEN
            RAISE EXCEPTION 'os-audit needs the group role %, and role % may not create roles: run os-audit migrate '
                            'as a superuser or a role with CREATEROLE, or have an administrator run '
                            '"CREATE ROLE % NOLOGIN" first', role_name, current_user, quote_ident(role_name)
              USING ERRCODE = 'insufficient_privilege';
        END;
      END LOOP;
    END
    $$`;
}

async function currentDatabaseAndSchema(db: Kysely<unknown>): Promise<{ database: string; schema: string }> {
  const { rows } = await sql<{ database: string; schema: string }>`SELECT current_database() AS database, current_schema() AS schema`.execute(db);
  return rows[0]!;
}
