import { type Kysely, sql } from 'kysely';

/**
 * The projector's bookkeeping, and (until 0007) the field checks of the OS snapshot's readers.
 *
 * - `projection_checkpoints`: how far each projection has read, in (transaction_id, position)
 *   order, moved only by a compare-and-set; `projection_leases`: which projector may write
 *   (owner, epoch as a fencing token, expiry); `projection_errors`: events set aside by
 *   `--skip-invalid`.
 *
 * Earlier os-audit versions also made the OS snapshot's tables and its view `os_snapshot_json`
 * here: the projection makes them now (`projections/os-snapshot/migrations/0000-tables.ts`),
 * and a database migrated before keeps them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE projection_checkpoints (
      projection text PRIMARY KEY,
      transaction_id xid8 NOT NULL DEFAULT '0',
      position bigint NOT NULL DEFAULT 0,
      epoch bigint NOT NULL DEFAULT 0,
      events_applied bigint NOT NULL DEFAULT 0,
      updated_at timestamptz NOT NULL DEFAULT now(),
      last_error text,
      last_error_at timestamptz
    )`.execute(db);
  await sql`
    CREATE TABLE projection_leases (
      projection text PRIMARY KEY,
      owner text NOT NULL,
      epoch bigint NOT NULL,
      acquired_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL
    )`.execute(db);
  await sql`
    CREATE TABLE projection_errors (
      projection text NOT NULL,
      position bigint NOT NULL,
      session_id text NOT NULL,
      seq bigint NOT NULL,
      kind text NOT NULL,
      problem text NOT NULL,
      skipped_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (projection, position)
    )`.execute(db);

  // Field checks of the snapshot's readers; each gives a message naming the field, or NULL.
  await sql`
    CREATE FUNCTION os_audit_u32_problem(e jsonb, field text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT CASE
        WHEN NOT e ? field THEN format('field "%s": required field is missing', field)
        WHEN jsonb_typeof(e -> field) = 'number' AND (e ->> field) ~ '^[0-9]{1,10}$'
             AND (e ->> field)::bigint <= 4294967295 THEN NULL
        ELSE format('field "%s": expected a u32 (an integer 0..4294967295), got %s', field, e -> field)
      END
    $$`.execute(db);
  await sql`
    CREATE FUNCTION os_audit_string_problem(e jsonb, field text, optional boolean) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT CASE
        WHEN NOT e ? field THEN CASE WHEN optional THEN NULL ELSE format('field "%s": required field is missing', field) END
        WHEN jsonb_typeof(e -> field) = 'string' THEN NULL
        WHEN optional AND jsonb_typeof(e -> field) = 'null' THEN NULL
        ELSE format('field "%s": expected a string, got %s', field, e -> field)
      END
    $$`.execute(db);
  await sql`
    CREATE FUNCTION os_audit_string_list_problem(e jsonb, field text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT CASE
        WHEN NOT e ? field THEN NULL
        WHEN jsonb_typeof(e -> field) <> 'array' THEN format('field "%s": expected an array of strings, got %s', field, e -> field)
        ELSE (SELECT format('field "%s[%s]": expected a string, got %s', field, i - 1, x)
              FROM jsonb_array_elements(e -> field) WITH ORDINALITY AS a(x, i)
              WHERE jsonb_typeof(x) <> 'string' ORDER BY i LIMIT 1)
      END
    $$`.execute(db);
  // What makes a stored event unreadable by the snapshot: the twin of
  // validateEvent(event, { fields: 'snapshot' }). NULL when the event is fine.
  await sql`
    CREATE FUNCTION os_snapshot_event_problem(kind text, e jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT CASE
        WHEN kind NOT IN ('suspended', 'resumed', 'agent_process_changed', 'signal_disposed', 'budget_exceeded')
          THEN NULL
        ELSE coalesce(
          os_audit_u32_problem(e, 'turn'),
          CASE kind
            WHEN 'suspended' THEN coalesce(
              os_audit_string_problem(e, 'reason', false),
              os_audit_string_list_problem(e, 'pending_calls'))
            WHEN 'agent_process_changed' THEN coalesce(
              os_audit_string_problem(e, 'agent_id', false),
              os_audit_string_problem(e, 'parent_session_id', false),
              os_audit_string_problem(e, 'role', false),
              os_audit_string_problem(e, 'isolation', false),
              os_audit_string_problem(e, 'context_inheritance', false),
              CASE WHEN e ? 'state' THEN os_audit_string_problem(e, 'state', false) END,
              os_audit_string_list_problem(e, 'permitted_capability_ids'),
              os_audit_string_problem(e, 'result_termination', true))
            WHEN 'signal_disposed' THEN coalesce(
              os_audit_string_problem(e, 'signal_id', false),
              os_audit_string_problem(e, 'disposition', false),
              os_audit_u32_problem(e, 'queue_depth'))
            WHEN 'budget_exceeded' THEN os_audit_string_problem(e, 'budget', false)
          END)
      END
    $$`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['projection_checkpoints', 'projection_leases', 'projection_errors']) {
    await sql`DROP TABLE ${sql.table(table)}`.execute(db);
  }
  await sql`DROP FUNCTION os_snapshot_event_problem(text, jsonb)`.execute(db);
  await sql`DROP FUNCTION os_audit_u32_problem(jsonb, text)`.execute(db);
  await sql`DROP FUNCTION os_audit_string_problem(jsonb, text, boolean)`.execute(db);
  await sql`DROP FUNCTION os_audit_string_list_problem(jsonb, text)`.execute(db);
}

/**
 * Whether 0002 of an earlier os-audit made the OS snapshot's tables in this database: the later
 * engine migrations change them only there.
 */
export async function madeOsSnapshotTables(db: Kysely<unknown>): Promise<boolean> {
  const { rows } = await sql<{ present: boolean }>`SELECT to_regclass('os_snapshots') IS NOT NULL AS present`.execute(db);
  return rows[0]!.present;
}
