import { type Kysely, sql } from 'kysely';

/**
 * The append-only event store: one row per event in `session_events`, one head row per
 * session in `sessions`.
 *
 * - `transaction_id` (xid8) is the writing transaction; readers that must never skip a row
 *   committed out of position order read in (transaction_id, position) order below the
 *   oldest transaction still in progress.
 * - `sessions.last_seq` is the head of each log: appends to one session serialize on that row,
 *   appends to different sessions run in parallel.
 * - History is immutable in the database itself: UPDATE, DELETE and TRUNCATE of events are
 *   refused by triggers that fire whoever connects, also under session_replication_role=replica.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('sessions')
    .addColumn('session_id', 'text', (col) => col.primaryKey())
    .addColumn('last_seq', 'bigint', (col) => col.notNull().check(sql`last_seq >= 0`))
    .addColumn('first_recorded_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('last_recorded_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('session_events')
    .addColumn('position', 'bigint', (col) => col.generatedAlwaysAsIdentity().primaryKey())
    .addColumn('transaction_id', sql`xid8`, (col) => col.notNull().defaultTo(sql`pg_current_xact_id()`))
    .addColumn('session_id', 'text', (col) => col.notNull())
    .addColumn('seq', 'bigint', (col) => col.notNull().check(sql`seq >= 0`))
    .addColumn('kind', 'text', (col) => col.notNull())
    .addColumn('turn', 'bigint')
    .addColumn('payload', 'jsonb', (col) => col.notNull())
    // The exact event text, kept only when `payload` could not hold it (U+0000 or a lone
    // surrogate in a string, which jsonb refuses): there `payload` has U+FFFD instead.
    .addColumn('payload_text', 'text')
    .addColumn('recorded_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('session_events_session_seq_key', ['session_id', 'seq'])
    .execute();

  await db.schema
    .createIndex('session_events_transaction_position_idx')
    .on('session_events')
    .columns(['transaction_id', 'position'])
    .execute();

  await sql`
    CREATE FUNCTION os_audit_refuse_history_change() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION '% on %: os-audit keeps history append-only', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'events are never changed or removed; append a new event instead';
    END
    $$`.execute(db);

  await sql`
    CREATE FUNCTION os_audit_guard_session_head() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.session_id <> OLD.session_id OR NEW.last_seq < OLD.last_seq
         OR NEW.first_recorded_at <> OLD.first_recorded_at THEN
        RAISE EXCEPTION 'UPDATE on sessions: a session head only moves forward (session %, last_seq % -> %)',
          OLD.session_id, OLD.last_seq, NEW.last_seq
          USING ERRCODE = 'insufficient_privilege';
      END IF;
      RETURN NEW;
    END
    $$`.execute(db);

  await sql`
    CREATE FUNCTION os_audit_notify_appended() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      -- One notification per transaction: PostgreSQL folds identical ones, delivered on commit.
      PERFORM pg_notify('os_audit_events_appended', '');
      RETURN NULL;
    END
    $$`.execute(db);

  await sql`
    CREATE TRIGGER session_events_refuse_update_delete
      BEFORE UPDATE OR DELETE ON session_events
      FOR EACH STATEMENT EXECUTE FUNCTION os_audit_refuse_history_change()`.execute(db);
  await sql`
    CREATE TRIGGER session_events_refuse_truncate
      BEFORE TRUNCATE ON session_events
      FOR EACH STATEMENT EXECUTE FUNCTION os_audit_refuse_history_change()`.execute(db);
  await sql`
    CREATE TRIGGER session_events_notify_appended
      AFTER INSERT ON session_events
      FOR EACH STATEMENT EXECUTE FUNCTION os_audit_notify_appended()`.execute(db);
  await sql`
    CREATE TRIGGER sessions_refuse_delete
      BEFORE DELETE ON sessions
      FOR EACH STATEMENT EXECUTE FUNCTION os_audit_refuse_history_change()`.execute(db);
  await sql`
    CREATE TRIGGER sessions_refuse_truncate
      BEFORE TRUNCATE ON sessions
      FOR EACH STATEMENT EXECUTE FUNCTION os_audit_refuse_history_change()`.execute(db);
  await sql`
    CREATE TRIGGER sessions_guard_head
      BEFORE UPDATE ON sessions
      FOR EACH ROW EXECUTE FUNCTION os_audit_guard_session_head()`.execute(db);

  // ALWAYS: the guards also fire for sessions with session_replication_role = replica.
  for (const [table, trigger] of [
    ['session_events', 'session_events_refuse_update_delete'],
    ['session_events', 'session_events_refuse_truncate'],
    ['sessions', 'sessions_refuse_delete'],
    ['sessions', 'sessions_refuse_truncate'],
    ['sessions', 'sessions_guard_head'],
  ] as const) {
    await sql`ALTER TABLE ${sql.table(table)} ENABLE ALWAYS TRIGGER ${sql.id(trigger)}`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('session_events').execute();
  await db.schema.dropTable('sessions').execute();
  await sql`DROP FUNCTION os_audit_notify_appended()`.execute(db);
  await sql`DROP FUNCTION os_audit_guard_session_head()`.execute(db);
  await sql`DROP FUNCTION os_audit_refuse_history_change()`.execute(db);
}
