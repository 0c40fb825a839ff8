import { type Kysely, sql } from 'kysely';

const WRITER_ROLE = 'os_audit_writer';
const JOURNAL_TABLES = ['kernel_journal_operations', 'kernel_journal_records', 'kernel_journal_checkpoints'];

/**
 * The writer role may do to the kernel journal (0008) what `PostgresKernelJournal` and the
 * import of a journal folder do, by the v0.2.60 SDK's `KernelJournal` semantics, and no more.
 * (0008 granted it every change of every column.) That is: append records and prune those an
 * acknowledged checkpoint covers; install and acknowledge checkpoints; move an operation's head
 * and pruned anchor forward; stage and clear its outbound envelope.
 *
 * Grants: SELECT on the three tables, and INSERT of the columns the journal writes (never the
 * database's timestamps). UPDATE of the operation's head, anchor and envelope and of a
 * checkpoint's `acknowledged` only; no UPDATE of records at all. DELETE of records only.
 *
 * Guards are triggers that fire for every role (the owner too). Each refusal names the table,
 * the operation and the column, with SQLSTATE 42501 (insufficient_privilege) for a change of
 * what is stored and 23514 (check_violation) for a row the chain cannot hold:
 * - a stored record never changes; one is deleted only at or below both the operation's pruned
 *   anchor and an acknowledged checkpoint (where `pruneAckedPrefix` prunes), and a pruned
 *   step is not stored again;
 * - a checkpoint never changes but for `acknowledged`, false to true. It is installed in order:
 *   the next ordinal, naming the one before, covering no less. Its `covered_head` is the digest
 *   of the stored record at its step, or the pruned anchor's at the anchor's step;
 * - a head moves only forward, to a stored record (or to the pruned anchor: a chain imported
 *   pruned whole); a pruned anchor only forward (to no checkpoint in particular: an import
 *   stores a folder's anchor before its checkpoints);
 * - no checkpoint or operation is deleted, no journal table truncated.
 *
 * They are ordinary triggers, as 0009's: a superuser with session_replication_role = replica
 * (a repair, a logical replica) bypasses them. On Citus the journal's tables are plain tables
 * of the coordinator (0012 distributes only the log), so all of this holds there unchanged.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const writer = sql.id(WRITER_ROLE);
  await sql`REVOKE ALL ON ${sql.join(JOURNAL_TABLES.map((table) => sql.table(table)))} FROM ${writer}`.execute(db);
  await sql`
    GRANT SELECT, INSERT (operation_id, outbound_envelope),
      UPDATE (head_step_seq, head_digest, pruned_through_step_seq, pruned_covered_head, outbound_envelope)
    ON kernel_journal_operations TO ${writer}`.execute(db);
  await sql`
    GRANT SELECT, INSERT (operation_id, step_seq, record_digest, previous_record_digest, record_bytes), DELETE
    ON kernel_journal_records TO ${writer}`.execute(db);
  await sql`
    GRANT SELECT,
      INSERT (operation_id, ordinal, checkpoint_id, previous_checkpoint_id, covered_head, through_step_seq, state_digest, checkpoint_bytes, acknowledged),
      UPDATE (acknowledged)
    ON kernel_journal_checkpoints TO ${writer}`.execute(db);

  // The first column (by name) whose value differs, leaving out those that `may_change`.
  await sql`
    CREATE FUNCTION os_audit_changed_column(old_row jsonb, new_row jsonb, may_change text[]) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
      SELECT min(n.key) FROM jsonb_each(new_row) AS n WHERE n.value IS DISTINCT FROM old_row -> n.key AND n.key <> ALL (may_change)
    $$`.execute(db);

  await sql`
    CREATE FUNCTION os_audit_guard_journal_record() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
      changed text := os_audit_changed_column(to_jsonb(OLD), to_jsonb(NEW), '{}');
    BEGIN
      IF changed IS NOT NULL THEN
        RAISE EXCEPTION 'UPDATE on kernel_journal_records: operation %, step_seq %: % never changes', to_json(OLD.operation_id), OLD.step_seq, changed
          USING ERRCODE = 'insufficient_privilege', TABLE = 'kernel_journal_records', COLUMN = changed,
                HINT = 'a record stays as the runtime wrote it; the journal only appends and prunes';
      END IF;
      RETURN NEW;
    END
    $$`.execute(db);
  await sql`
    CREATE FUNCTION os_audit_check_journal_records_stored() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
      bad record;
    BEGIN
      SELECT a.operation_id, a.step_seq, o.pruned_through_step_seq INTO bad
      FROM appended AS a JOIN kernel_journal_operations AS o USING (operation_id)
      WHERE a.step_seq <= o.pruned_through_step_seq
      ORDER BY a.operation_id, a.step_seq
      LIMIT 1;
      IF bad.operation_id IS NOT NULL THEN
        RAISE EXCEPTION 'INSERT on kernel_journal_records: operation %, step_seq %: pruned (pruned_through_step_seq %)', to_json(bad.operation_id), bad.step_seq, bad.pruned_through_step_seq
          USING ERRCODE = 'check_violation', TABLE = 'kernel_journal_records', COLUMN = 'step_seq',
                HINT = 'a pruned record is not stored again; append after the head';
      END IF;
      RETURN NULL;
    END
    $$`.execute(db);
  await sql`
    CREATE FUNCTION os_audit_check_journal_records_pruned() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
      bad record;
    BEGIN
      SELECT * INTO bad
      FROM (SELECT r.operation_id, r.step_seq, o.pruned_through_step_seq AS anchor,
                   (SELECT max(c.through_step_seq) FROM kernel_journal_checkpoints AS c
                    WHERE c.operation_id = r.operation_id AND c.acknowledged) AS acknowledged_through
            FROM (SELECT operation_id, max(step_seq) AS step_seq FROM removed GROUP BY operation_id) AS r
            LEFT JOIN kernel_journal_operations AS o USING (operation_id)) AS deleted
      WHERE NOT coalesce(step_seq <= anchor AND step_seq <= acknowledged_through, false)
      ORDER BY operation_id
      LIMIT 1;
      IF bad.operation_id IS NULL THEN
        RETURN NULL;
      ELSIF NOT coalesce(bad.step_seq <= bad.anchor, false) THEN
        RAISE EXCEPTION 'DELETE on kernel_journal_records: operation %, step_seq %: not pruned (pruned_through_step_seq %)', to_json(bad.operation_id), bad.step_seq,
          coalesce(bad.anchor::text, 'none')
          USING ERRCODE = 'insufficient_privilege', TABLE = 'kernel_journal_records', COLUMN = 'pruned_through_step_seq',
                HINT = 'records are deleted only by pruning: through an acknowledged checkpoint, once the pruned anchor is there';
      ELSE
        RAISE EXCEPTION 'DELETE on kernel_journal_records: operation %, step_seq %: no acknowledged checkpoint covers it (through_step_seq %)', to_json(bad.operation_id), bad.step_seq,
          coalesce(bad.acknowledged_through::text, 'none')
          USING ERRCODE = 'insufficient_privilege', TABLE = 'kernel_journal_records', COLUMN = 'through_step_seq',
                HINT = 'records are deleted only by pruning: through an acknowledged checkpoint, once the pruned anchor is there';
      END IF;
    END
    $$`.execute(db);

  await sql`
    CREATE FUNCTION os_audit_guard_journal_checkpoint() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
      changed text := os_audit_changed_column(to_jsonb(OLD), to_jsonb(NEW), '{acknowledged}');
    BEGIN
      IF changed IS NOT NULL THEN
        RAISE EXCEPTION 'UPDATE on kernel_journal_checkpoints: operation %, ordinal %: % never changes', to_json(OLD.operation_id), OLD.ordinal, changed
          USING ERRCODE = 'insufficient_privilege', TABLE = 'kernel_journal_checkpoints', COLUMN = changed,
                HINT = 'a checkpoint stays as it was installed; install a new one instead';
      ELSIF OLD.acknowledged AND NOT NEW.acknowledged THEN
        RAISE EXCEPTION 'UPDATE on kernel_journal_checkpoints: operation %, ordinal %: acknowledged only goes from false to true', to_json(OLD.operation_id), OLD.ordinal
          USING ERRCODE = 'insufficient_privilege', TABLE = 'kernel_journal_checkpoints', COLUMN = 'acknowledged',
                HINT = 'an acknowledgement opens pruning, which may already have happened';
      END IF;
      RETURN NEW;
    END
    $$`.execute(db);
  // After the row, so that a statement installing several sees each one's predecessor.
  await sql`
    CREATE FUNCTION os_audit_check_journal_checkpoint_installed() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
      previous kernel_journal_checkpoints;
      operation kernel_journal_operations;
      covered text;
      problem text;
      problem_column text;
    BEGIN
      SELECT * INTO previous FROM kernel_journal_checkpoints WHERE operation_id = NEW.operation_id AND ordinal = NEW.ordinal - 1;
      SELECT * INTO operation FROM kernel_journal_operations WHERE operation_id = NEW.operation_id;
      SELECT record_digest INTO covered FROM kernel_journal_records WHERE operation_id = NEW.operation_id AND step_seq = NEW.through_step_seq;
      IF NEW.ordinal > 0 AND previous.ordinal IS NULL THEN
        problem := format('no checkpoint of ordinal %s is installed before it', NEW.ordinal - 1);
        problem_column := 'ordinal';
      ELSIF NEW.previous_checkpoint_id IS DISTINCT FROM previous.checkpoint_id THEN
        problem := format('previous_checkpoint_id %s is not the checkpoint before it, %s',
                          coalesce(to_json(NEW.previous_checkpoint_id)::text, 'none'), coalesce(to_json(previous.checkpoint_id)::text, 'none'));
        problem_column := 'previous_checkpoint_id';
      ELSIF NEW.through_step_seq < previous.through_step_seq THEN
        problem := format('through_step_seq %s is below the checkpoint before it (%s)', NEW.through_step_seq, previous.through_step_seq);
        problem_column := 'through_step_seq';
      ELSIF covered IS NOT NULL AND covered <> NEW.covered_head THEN
        problem := format('covered_head %s is not the record_digest of step_seq %s, %s', to_json(NEW.covered_head), NEW.through_step_seq, to_json(covered));
        problem_column := 'covered_head';
      ELSIF covered IS NULL AND NEW.through_step_seq = operation.pruned_through_step_seq AND NEW.covered_head <> operation.pruned_covered_head THEN
        problem := format('covered_head %s is not the pruned anchor''s, %s', to_json(NEW.covered_head), to_json(operation.pruned_covered_head));
        problem_column := 'covered_head';
      -- Below the anchor its record is gone: an older checkpoint an import carries over.
      ELSIF covered IS NULL AND NEW.through_step_seq > coalesce(operation.pruned_through_step_seq, -1) THEN
        problem := format('through_step_seq %s names no stored record', NEW.through_step_seq);
        problem_column := 'through_step_seq';
      END IF;
      IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'INSERT on kernel_journal_checkpoints: operation %, ordinal %: %', to_json(NEW.operation_id), NEW.ordinal, problem
          USING ERRCODE = 'check_violation', TABLE = 'kernel_journal_checkpoints', COLUMN = problem_column,
                HINT = 'a checkpoint is installed after the latest one, covering a record of the chain';
      END IF;
      RETURN NULL;
    END
    $$`.execute(db);

  await sql`
    CREATE FUNCTION os_audit_guard_journal_operation() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.operation_id IS DISTINCT FROM OLD.operation_id THEN
        RAISE EXCEPTION 'UPDATE on kernel_journal_operations: operation %: operation_id never changes', to_json(OLD.operation_id)
          USING ERRCODE = 'insufficient_privilege', TABLE = 'kernel_journal_operations', COLUMN = 'operation_id';
      END IF;
      IF (NEW.head_step_seq, NEW.head_digest) IS DISTINCT FROM (OLD.head_step_seq, OLD.head_digest) THEN
        IF NOT coalesce(NEW.head_step_seq > coalesce(OLD.head_step_seq, -1), false) THEN
          RAISE EXCEPTION 'UPDATE on kernel_journal_operations: operation %: the head only moves forward (head_step_seq % -> %)', to_json(OLD.operation_id),
            coalesce(OLD.head_step_seq::text, 'none'), coalesce(NEW.head_step_seq::text, 'none')
            USING ERRCODE = 'insufficient_privilege', TABLE = 'kernel_journal_operations', COLUMN = 'head_step_seq',
                  HINT = 'the head moves by compare-and-append, to the record appended';
        END IF;
        IF NOT EXISTS (SELECT FROM kernel_journal_records
                       WHERE operation_id = NEW.operation_id AND step_seq = NEW.head_step_seq AND record_digest = NEW.head_digest)
           AND (NEW.head_step_seq, NEW.head_digest) IS DISTINCT FROM (NEW.pruned_through_step_seq, NEW.pruned_covered_head) THEN
          RAISE EXCEPTION 'UPDATE on kernel_journal_operations: operation %: head_digest % at step_seq % names no stored record', to_json(OLD.operation_id),
            to_json(NEW.head_digest), NEW.head_step_seq
            USING ERRCODE = 'check_violation', TABLE = 'kernel_journal_operations', COLUMN = 'head_digest',
                  HINT = 'store the record first, in the same transaction';
        END IF;
      END IF;
      IF (NEW.pruned_through_step_seq, NEW.pruned_covered_head) IS DISTINCT FROM (OLD.pruned_through_step_seq, OLD.pruned_covered_head)
         AND NOT coalesce(NEW.pruned_through_step_seq > coalesce(OLD.pruned_through_step_seq, -1), false) THEN
        RAISE EXCEPTION 'UPDATE on kernel_journal_operations: operation %: the pruned anchor only moves forward (pruned_through_step_seq % -> %)', to_json(OLD.operation_id),
          coalesce(OLD.pruned_through_step_seq::text, 'none'), coalesce(NEW.pruned_through_step_seq::text, 'none')
          USING ERRCODE = 'insufficient_privilege', TABLE = 'kernel_journal_operations', COLUMN = 'pruned_through_step_seq',
                HINT = 'a pruned record stays pruned';
      END IF;
      RETURN NEW;
    END
    $$`.execute(db);

  await sql`
    CREATE FUNCTION os_audit_refuse_journal_removal() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'TRUNCATE' THEN
        RAISE EXCEPTION 'TRUNCATE on %: the kernel journal removes nothing wholesale', TG_TABLE_NAME
          USING ERRCODE = 'insufficient_privilege', TABLE = TG_TABLE_NAME,
                HINT = 'records are removed only by pruning through an acknowledged checkpoint';
      END IF;
      RAISE EXCEPTION 'DELETE on %: operation %: the kernel journal never removes an operation or a checkpoint', TG_TABLE_NAME, to_json(OLD.operation_id)
        USING ERRCODE = 'insufficient_privilege', TABLE = TG_TABLE_NAME,
              HINT = 'records are removed only by pruning through an acknowledged checkpoint';
    END
    $$`.execute(db);

  await sql`
    CREATE TRIGGER kernel_journal_records_never_change
      BEFORE UPDATE ON kernel_journal_records
      FOR EACH ROW EXECUTE FUNCTION os_audit_guard_journal_record()`.execute(db);
  await sql`
    CREATE TRIGGER kernel_journal_records_not_stored_again
      AFTER INSERT ON kernel_journal_records REFERENCING NEW TABLE AS appended
      FOR EACH STATEMENT EXECUTE FUNCTION os_audit_check_journal_records_stored()`.execute(db);
  await sql`
    CREATE TRIGGER kernel_journal_records_deleted_when_pruned
      AFTER DELETE ON kernel_journal_records REFERENCING OLD TABLE AS removed
      FOR EACH STATEMENT EXECUTE FUNCTION os_audit_check_journal_records_pruned()`.execute(db);
  await sql`
    CREATE TRIGGER kernel_journal_checkpoints_only_acknowledged
      BEFORE UPDATE ON kernel_journal_checkpoints
      FOR EACH ROW EXECUTE FUNCTION os_audit_guard_journal_checkpoint()`.execute(db);
  await sql`
    CREATE TRIGGER kernel_journal_checkpoints_installed_in_order
      AFTER INSERT ON kernel_journal_checkpoints
      FOR EACH ROW EXECUTE FUNCTION os_audit_check_journal_checkpoint_installed()`.execute(db);
  await sql`
    CREATE TRIGGER kernel_journal_operations_move_forward
      BEFORE UPDATE ON kernel_journal_operations
      FOR EACH ROW EXECUTE FUNCTION os_audit_guard_journal_operation()`.execute(db);
  for (const table of ['kernel_journal_operations', 'kernel_journal_checkpoints']) {
    await sql`
      CREATE TRIGGER ${sql.id(`${table}_refuse_delete`)}
        BEFORE DELETE ON ${sql.table(table)}
        FOR EACH ROW EXECUTE FUNCTION os_audit_refuse_journal_removal()`.execute(db);
  }
  for (const table of JOURNAL_TABLES) {
    await sql`
      CREATE TRIGGER ${sql.id(`${table}_refuse_truncate`)}
        BEFORE TRUNCATE ON ${sql.table(table)}
        FOR EACH STATEMENT EXECUTE FUNCTION os_audit_refuse_journal_removal()`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // CASCADE: the triggers go with their functions.
  await sql`
    DROP FUNCTION os_audit_refuse_journal_removal(), os_audit_guard_journal_operation(), os_audit_check_journal_checkpoint_installed(),
      os_audit_guard_journal_checkpoint(), os_audit_check_journal_records_pruned(), os_audit_check_journal_records_stored(),
      os_audit_guard_journal_record(), os_audit_changed_column(jsonb, jsonb, text[]) CASCADE`.execute(db);
  // Back to 0008's grants: a table-level REVOKE takes the column grants too.
  const tables = sql.join(JOURNAL_TABLES.map((table) => sql.table(table)));
  await sql`REVOKE ALL ON ${tables} FROM ${sql.id(WRITER_ROLE)}`.execute(db);
  await sql`GRANT SELECT, INSERT, UPDATE, DELETE ON ${tables} TO ${sql.id(WRITER_ROLE)}`.execute(db);
}
