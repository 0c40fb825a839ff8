import { type Kysely, sql } from 'kysely';

/**
 * The runtime's kernel journal (the v0.2.60 SDK's `KernelJournal`), durable in PostgreSQL
 * beside the session logs. Per operation it keeps a chain of opaque records, appended by
 * compare-and-set on its head, and checkpoints, installed by compare-and-set on the latest one.
 * It also keeps a pruned prefix's anchor and one staged outbound envelope. See
 * `src/session-log/postgres-kernel-journal.ts`.
 *
 * - `kernel_journal_operations`: one row per operation, locked by every change to it (the CAS):
 *   its head, its pruned anchor, its staged envelope.
 * - `kernel_journal_records`: the retained records, `record_bytes` verbatim.
 * - `kernel_journal_checkpoints`: installed checkpoints by ordinal.
 *
 * The writer role (the runtime's login) may read and change them; readers and the projector may not.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE kernel_journal_operations (
      operation_id text PRIMARY KEY,
      head_step_seq bigint,
      head_digest text,
      pruned_through_step_seq bigint,
      pruned_covered_head text,
      outbound_envelope text,
      CHECK ((head_step_seq IS NULL) = (head_digest IS NULL)),
      CHECK ((pruned_through_step_seq IS NULL) = (pruned_covered_head IS NULL))
    )`.execute(db);
  await sql`
    CREATE TABLE kernel_journal_records (
      operation_id text NOT NULL REFERENCES kernel_journal_operations (operation_id),
      step_seq bigint NOT NULL CHECK (step_seq >= 0),
      record_digest text NOT NULL,
      previous_record_digest text,
      record_bytes bytea NOT NULL,
      recorded_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (operation_id, step_seq)
    )`.execute(db);
  await sql`CREATE INDEX kernel_journal_records_digest_idx ON kernel_journal_records (operation_id, record_digest)`.execute(db);
  await sql`
    CREATE TABLE kernel_journal_checkpoints (
      operation_id text NOT NULL REFERENCES kernel_journal_operations (operation_id),
      ordinal bigint NOT NULL CHECK (ordinal >= 0),
      checkpoint_id text NOT NULL,
      previous_checkpoint_id text,
      covered_head text NOT NULL,
      through_step_seq bigint NOT NULL,
      state_digest text NOT NULL,
      checkpoint_bytes bytea NOT NULL,
      acknowledged boolean NOT NULL DEFAULT false,
      installed_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (operation_id, ordinal)
    )`.execute(db);
  await sql`
    GRANT SELECT, INSERT, UPDATE, DELETE ON kernel_journal_operations, kernel_journal_records, kernel_journal_checkpoints
    TO os_audit_writer`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE kernel_journal_checkpoints, kernel_journal_records, kernel_journal_operations`.execute(db);
}
