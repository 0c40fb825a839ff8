import { randomBytes } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { down, up } from '../../migrations/0018-kernel-journal-grants.js';
import { openDatabase } from '../../src/db/open-database.js';
import type { DB } from '../../src/db/schema.js';
import { importLogs } from '../../src/import/import-logs.js';
import { JournalCasConflictError, JournalIntegrityError, PostgresKernelJournal } from '../../src/session-log/postgres-kernel-journal.js';
import { EventStore } from '../../src/store/event-store.js';
import { connectionUrlAs, dropLoginUser } from '../deploy/login-user.js';
import { copySdkLog } from '../support/journal-folder.js';
import { useTempDir } from '../support/log-files.js';
import { useTestDatabase } from '../support/test-database.js';

/** Migration 0018: the writer role may do to the kernel journal what the SDK's journal does, and nothing more. */
const testDb = useTestDatabase();
const tempDir = useTempDir();

const writer = { name: `os_audit_test_journal_writer_${randomBytes(4).toString('hex')}`, password: randomBytes(12).toString('hex') };
let writerDb: Kysely<DB>;

beforeAll(async () => {
  await sql`CREATE ROLE ${sql.id(writer.name)} LOGIN PASSWORD ${sql.lit(writer.password)} IN ROLE os_audit_writer`.execute(testDb.db);
  writerDb = openDatabase({ connectionString: connectionUrlAs(testDb.url, writer.name, writer.password), maxConnections: 2 });
});

afterAll(async () => {
  await writerDb?.destroy();
  await dropLoginUser(testDb.db, writer.name);
});

const writerJournal = () => new PostgresKernelJournal(writerDb, { connectionRetry: false });
const record = (stepSeq: number) => ({ step_seq: stepSeq, record_digest: `d${stepSeq}`, record_bytes: new Uint8Array([stepSeq, 0, 255]) });
const candidate = (checkpointId: string, throughStepSeq: number) => ({
  checkpoint_id: checkpointId,
  through_step_seq: throughStepSeq,
  state_digest: `s${throughStepSeq}`,
  checkpoint_bytes: new Uint8Array([throughStepSeq, 1]),
});

/**
 * As the writer: records 0..4, `ckpt-1` through 2 acknowledged and pruned (3 and 4 retained,
 * the anchor at 2), `ckpt-2` through 4 installed, not acknowledged.
 */
async function journalWithPrunedPrefix(operationId: string): Promise<void> {
  const journal = writerJournal();
  await journal.compareAndAppend(operationId, undefined, record(0));
  for (let stepSeq = 1; stepSeq <= 4; stepSeq++) await journal.compareAndAppend(operationId, `d${stepSeq - 1}`, record(stepSeq));
  await journal.compareAndInstallCheckpoint(operationId, undefined, 'd2', candidate('ckpt-1', 2));
  await journal.ackCheckpoint(operationId, 'ckpt-1');
  await journal.pruneAckedPrefix(operationId);
  await journal.compareAndInstallCheckpoint(operationId, 'ckpt-1', 'd4', candidate('ckpt-2', 4));
}

/** What {@link journalWithPrunedPrefix} stored, read back. */
async function storedJournal(operationId: string) {
  const journal = writerJournal();
  return { head: await journal.head(operationId), records: await journal.readFrom(operationId), checkpoints: await checkpointsOf(operationId) };
}

async function checkpointsOf(operationId: string) {
  return testDb.db.selectFrom('kernel_journal_checkpoints').selectAll().where('operation_id', '=', operationId).orderBy('ordinal').execute();
}

/** The writer role's privileges on the journal's tables: table-wide, or of the columns listed. */
async function writerPrivileges(): Promise<Record<string, string[]>> {
  const { rows } = await sql<{ table_name: string; privilege: string }>`
    WITH granted AS (
      SELECT c.relname AS table_name, NULL::name AS column_name, acl.privilege_type
      FROM pg_class AS c CROSS JOIN LATERAL aclexplode(c.relacl) AS acl
      WHERE c.relnamespace = current_schema()::regnamespace AND c.relname LIKE 'kernel\\_journal\\_%' AND acl.grantee = 'os_audit_writer'::regrole
      UNION ALL
      SELECT c.relname, a.attname, acl.privilege_type
      FROM pg_attribute AS a JOIN pg_class AS c ON c.oid = a.attrelid CROSS JOIN LATERAL aclexplode(a.attacl) AS acl
      WHERE c.relnamespace = current_schema()::regnamespace AND c.relname LIKE 'kernel\\_journal\\_%' AND acl.grantee = 'os_audit_writer'::regrole
    )
    SELECT table_name, privilege_type || coalesce(' (' || string_agg(column_name, ', ' ORDER BY column_name) || ')', '') AS privilege
    FROM granted GROUP BY table_name, privilege_type, column_name IS NULL
    ORDER BY 1, 2`.execute(testDb.db);
  const privileges: Record<string, string[]> = {};
  for (const row of rows) (privileges[row.table_name] ??= []).push(row.privilege);
  return privileges;
}

const GRANTED_BY_0018 = {
  kernel_journal_checkpoints: [
    'INSERT (acknowledged, checkpoint_bytes, checkpoint_id, covered_head, operation_id, ordinal, previous_checkpoint_id, state_digest, through_step_seq)',
    'SELECT',
    'UPDATE (acknowledged)',
  ],
  kernel_journal_operations: [
    'INSERT (operation_id, outbound_envelope)',
    'SELECT',
    'UPDATE (head_digest, head_step_seq, outbound_envelope, pruned_covered_head, pruned_through_step_seq)',
  ],
  kernel_journal_records: ['DELETE', 'INSERT (operation_id, previous_record_digest, record_bytes, record_digest, step_seq)', 'SELECT'],
};

function refusal(db: Kysely<DB>, statement: string) {
  return expect(sql.raw(statement).execute(db), statement).rejects;
}

/** Refused for want of a privilege: the grants, not a guard. */
async function expectDenied(statement: string): Promise<void> {
  await refusal(writerDb, statement).toMatchObject({ code: '42501', message: expect.stringMatching(/^permission denied for table kernel_journal_/) });
}

describe('the kernel journal as a member of os_audit_writer', () => {
  it('may read the journal, insert the columns it writes, update a head, an anchor, an envelope and an acknowledgement, and delete records', async () => {
    expect(await writerPrivileges()).toEqual(GRANTED_BY_0018);
  });

  it('runs every operation of PostgresKernelJournal: appends and CAS conflicts, checkpoints, acknowledgements, pruning, the outbound envelope', async () => {
    const journal = writerJournal();
    const op = 'op-runtime';
    expect(await journal.compareAndAppend(op, undefined, record(0))).toEqual({ step_seq: 0, record_digest: 'd0' });
    await journal.compareAndAppend(op, 'd0', record(1));
    await expect(journal.compareAndAppend(op, undefined, record(0))).rejects.toBeInstanceOf(JournalCasConflictError);
    await expect(journal.compareAndAppend(op, 'd0', record(2))).rejects.toBeInstanceOf(JournalCasConflictError);
    await expect(journal.compareAndAppend(op, 'd1', record(3))).rejects.toBeInstanceOf(JournalIntegrityError);
    for (let stepSeq = 2; stepSeq <= 4; stepSeq++) await journal.compareAndAppend(op, `d${stepSeq - 1}`, record(stepSeq));
    expect(await journal.head(op)).toEqual({ step_seq: 4, record_digest: 'd4' });
    expect((await journal.readFrom(op, 3)).map((entry) => entry.step_seq)).toEqual([3, 4]);
    expect((await journal.recordsAfter(op, 'd1')).map((entry) => entry.step_seq)).toEqual([2, 3, 4]);

    expect(await journal.compareAndInstallCheckpoint(op, undefined, 'd2', candidate('ckpt-1', 2))).toMatchObject({ ordinal: 0, acknowledged: false });
    await expect(journal.compareAndInstallCheckpoint(op, undefined, 'd4', candidate('ckpt-x', 4))).rejects.toBeInstanceOf(JournalCasConflictError);
    await expect(journal.compareAndInstallCheckpoint(op, 'ckpt-1', 'd9', candidate('ckpt-x', 3))).rejects.toBeInstanceOf(JournalIntegrityError);
    expect(await journal.pruneAckedPrefix(op)).toEqual({ pruned_through_step_seq: -1, pruned_count: 0 });
    expect(await journal.ackCheckpoint(op, 'ckpt-1')).toMatchObject({ checkpoint_id: 'ckpt-1', acknowledged: true });
    expect(await journal.ackCheckpoint(op, 'ckpt-1')).toMatchObject({ checkpoint_id: 'ckpt-1', acknowledged: true });
    expect(await journal.pruneAckedPrefix(op)).toEqual({ pruned_through_step_seq: 2, pruned_count: 3 });
    expect(await journal.pruneAckedPrefix(op)).toEqual({ pruned_through_step_seq: 2, pruned_count: 0 });
    expect((await journal.recordsAfter(op, 'd2')).map((entry) => entry.step_seq)).toEqual([3, 4]);

    // Pruned whole: the head is the anchor, and the chain goes on from it.
    await journal.compareAndInstallCheckpoint(op, 'ckpt-1', 'd4', candidate('ckpt-2', 4));
    await journal.ackCheckpoint(op, 'ckpt-2');
    expect(await journal.pruneAckedPrefix(op)).toEqual({ pruned_through_step_seq: 4, pruned_count: 2 });
    expect(await journal.readFrom(op)).toEqual([]);
    expect(await journal.head(op)).toEqual({ step_seq: 4, record_digest: 'd4' });
    await journal.compareAndAppend(op, 'd4', record(5));
    expect(await journal.compareAndInstallCheckpoint(op, 'ckpt-2', 'd4', candidate('ckpt-3', 4))).toMatchObject({ ordinal: 2, covered_head: 'd4' });
    expect(await journal.readFrom(op)).toEqual([{ ...record(5), previous_record_digest: 'd4' }]);

    await journal.stageOutboundEnvelope(op, '{"envelope":1}');
    await journal.stageOutboundEnvelope(op, '{"envelope":2}');
    expect(await journal.readOutboundEnvelope(op)).toBe('{"envelope":2}');
    await journal.clearOutboundEnvelope(op);
    await journal.clearOutboundEnvelope(op);
    expect(await journal.readOutboundEnvelope(op)).toBeUndefined();
    await journal.stageOutboundEnvelope('op-envelope-only', '{"envelope":3}');
    expect(await journal.readOutboundEnvelope('op-envelope-only')).toBe('{"envelope":3}');
  });

  it("imports the SDK's journal folder (acknowledged checkpoints, a pruned anchor, an envelope), and again stores nothing new", async () => {
    const dir = copySdkLog(tempDir());
    const first = await importLogs(new EventStore(writerDb), dir);
    expect(first.failures).toEqual([]);
    expect(first.journal).toMatchObject({ newRecords: 5, newCheckpoints: 2, newAcknowledgements: 1, newAnchors: 1, newOutboundEnvelopes: 1 });
    const again = await importLogs(new EventStore(writerDb), dir);
    expect(again.journal).toMatchObject({ newRecords: 0, existingRecords: 5, newCheckpoints: 0, existingCheckpoints: 2 });
  });

  it('may not change a stored record, nor write one under another name or time', async () => {
    await journalWithPrunedPrefix('op-records');
    const before = await storedJournal('op-records');
    for (const statement of [
      "UPDATE kernel_journal_records SET record_bytes = '\\x00' WHERE operation_id = 'op-records'",
      "UPDATE kernel_journal_records SET record_digest = 'forged' WHERE operation_id = 'op-records'",
      "UPDATE kernel_journal_records SET previous_record_digest = NULL WHERE operation_id = 'op-records'",
      "UPDATE kernel_journal_records SET step_seq = step_seq + 100 WHERE operation_id = 'op-records'",
      "UPDATE kernel_journal_records SET operation_id = 'op-other' WHERE operation_id = 'op-records'",
      `INSERT INTO kernel_journal_records (operation_id, step_seq, record_digest, record_bytes) VALUES ('op-records', 3, 'd3', '\\x00')
         ON CONFLICT (operation_id, step_seq) DO UPDATE SET record_bytes = EXCLUDED.record_bytes`,
      "INSERT INTO kernel_journal_records (operation_id, step_seq, record_digest, record_bytes, recorded_at) VALUES ('op-records', 5, 'd5', '\\x05', now())",
      'TRUNCATE kernel_journal_records',
    ]) {
      await expectDenied(statement);
    }
    expect(await storedJournal('op-records')).toEqual(before);
  });

  it('deletes records only where pruning reaches: at or below the pruned anchor and an acknowledged checkpoint', async () => {
    await journalWithPrunedPrefix('op-prune');
    const before = await storedJournal('op-prune');
    const notPruned = { code: '42501', table: 'kernel_journal_records', column: 'pruned_through_step_seq' };
    await refusal(writerDb, "DELETE FROM kernel_journal_records WHERE operation_id = 'op-prune' AND step_seq = 3").toMatchObject({
      ...notPruned,
      message: 'DELETE on kernel_journal_records: operation "op-prune", step_seq 3: not pruned (pruned_through_step_seq 2)',
    });
    await refusal(writerDb, "DELETE FROM kernel_journal_records WHERE operation_id = 'op-prune'").toMatchObject({
      ...notPruned,
      message: expect.stringContaining('step_seq 4: not pruned'),
    });
    // A pruned step is not stored again (with other bytes, say).
    await refusal(writerDb, "INSERT INTO kernel_journal_records (operation_id, step_seq, record_digest, record_bytes) VALUES ('op-prune', 1, 'd1', '\\xff')").toMatchObject({
      code: '23514',
      table: 'kernel_journal_records',
      column: 'step_seq',
      message: 'INSERT on kernel_journal_records: operation "op-prune", step_seq 1: pruned (pruned_through_step_seq 2)',
    });
    expect(await storedJournal('op-prune')).toEqual(before);

    // The anchor may move forward (pruning moves it), but not past what an acknowledged checkpoint covers for a delete.
    await sql`UPDATE kernel_journal_operations SET pruned_through_step_seq = 4, pruned_covered_head = 'd4' WHERE operation_id = 'op-prune'`.execute(writerDb);
    await refusal(writerDb, "DELETE FROM kernel_journal_records WHERE operation_id = 'op-prune' AND step_seq = 3").toMatchObject({
      code: '42501',
      table: 'kernel_journal_records',
      column: 'through_step_seq',
      message: 'DELETE on kernel_journal_records: operation "op-prune", step_seq 3: no acknowledged checkpoint covers it (through_step_seq 2)',
    });
    expect((await writerJournal().readFrom('op-prune')).map((entry) => entry.step_seq)).toEqual([3, 4]);
    await writerJournal().ackCheckpoint('op-prune', 'ckpt-2');
    expect(await writerJournal().pruneAckedPrefix('op-prune')).toEqual({ pruned_through_step_seq: 4, pruned_count: 2 });
  });

  it('may not change a checkpoint but to acknowledge it, nor remove one', async () => {
    await journalWithPrunedPrefix('op-checkpoints');
    const before = await storedJournal('op-checkpoints');
    for (const statement of [
      "UPDATE kernel_journal_checkpoints SET checkpoint_bytes = '\\x00' WHERE operation_id = 'op-checkpoints'",
      "UPDATE kernel_journal_checkpoints SET state_digest = 'forged' WHERE operation_id = 'op-checkpoints'",
      "UPDATE kernel_journal_checkpoints SET covered_head = 'd3', through_step_seq = 3 WHERE operation_id = 'op-checkpoints'",
      "UPDATE kernel_journal_checkpoints SET checkpoint_id = 'forged', previous_checkpoint_id = NULL WHERE operation_id = 'op-checkpoints'",
      "UPDATE kernel_journal_checkpoints SET ordinal = ordinal + 10 WHERE operation_id = 'op-checkpoints'",
      `INSERT INTO kernel_journal_checkpoints (operation_id, ordinal, checkpoint_id, covered_head, through_step_seq, state_digest, checkpoint_bytes)
         VALUES ('op-checkpoints', 1, 'ckpt-2', 'd4', 4, 's4', '\\x00') ON CONFLICT (operation_id, ordinal) DO UPDATE SET checkpoint_bytes = EXCLUDED.checkpoint_bytes`,
      "DELETE FROM kernel_journal_checkpoints WHERE operation_id = 'op-checkpoints'",
      'TRUNCATE kernel_journal_checkpoints',
    ]) {
      await expectDenied(statement);
    }
    await refusal(writerDb, "UPDATE kernel_journal_checkpoints SET acknowledged = false WHERE operation_id = 'op-checkpoints' AND ordinal = 0").toMatchObject({
      code: '42501',
      table: 'kernel_journal_checkpoints',
      column: 'acknowledged',
      message: 'UPDATE on kernel_journal_checkpoints: operation "op-checkpoints", ordinal 0: acknowledged only goes from false to true',
    });
    expect(await storedJournal('op-checkpoints')).toEqual(before);
  });

  it('installs a checkpoint only after the latest one, covering a record of the chain', async () => {
    await journalWithPrunedPrefix('op-install');
    const install = (ordinal: number, previous: string, through: number, coveredHead: string) =>
      `INSERT INTO kernel_journal_checkpoints (operation_id, ordinal, checkpoint_id, previous_checkpoint_id, covered_head, through_step_seq, state_digest, checkpoint_bytes, acknowledged)
         VALUES ('op-install', ${ordinal}, 'forged', '${previous}', '${coveredHead}', ${through}, 's', '\\x00', true)`;
    for (const [ordinal, previous, through, coveredHead, column, problem] of [
      [3, 'ckpt-2', 4, 'd4', 'ordinal', 'no checkpoint of ordinal 2 is installed before it'],
      [2, 'ckpt-1', 4, 'd4', 'previous_checkpoint_id', 'previous_checkpoint_id "ckpt-1" is not the checkpoint before it, "ckpt-2"'],
      [2, 'ckpt-2', 3, 'd3', 'through_step_seq', 'through_step_seq 3 is below the checkpoint before it (4)'],
      [2, 'ckpt-2', 4, 'forged', 'covered_head', 'covered_head "forged" is not the record_digest of step_seq 4, "d4"'],
      [2, 'ckpt-2', 9, 'd9', 'through_step_seq', 'through_step_seq 9 names no stored record'],
    ] as const) {
      await refusal(writerDb, install(ordinal, previous, through, coveredHead)).toMatchObject({
        code: '23514',
        table: 'kernel_journal_checkpoints',
        column,
        message: `INSERT on kernel_journal_checkpoints: operation "op-install", ordinal ${ordinal}: ${problem}`,
      });
    }
    expect((await checkpointsOf('op-install')).map((checkpoint) => checkpoint.checkpoint_id)).toEqual(['ckpt-1', 'ckpt-2']);
  });

  it('moves a head and a pruned anchor only forward, a head only to a stored record, and removes no operation', async () => {
    await journalWithPrunedPrefix('op-heads');
    const before = await storedJournal('op-heads');
    for (const [assignment, code, column, problem] of [
      ["head_step_seq = 3, head_digest = 'd3'", '42501', 'head_step_seq', 'the head only moves forward (head_step_seq 4 -> 3)'],
      ["head_digest = 'forged'", '42501', 'head_step_seq', 'the head only moves forward (head_step_seq 4 -> 4)'],
      ['head_step_seq = NULL, head_digest = NULL', '42501', 'head_step_seq', 'the head only moves forward (head_step_seq 4 -> none)'],
      ["head_step_seq = 9, head_digest = 'forged'", '23514', 'head_digest', 'head_digest "forged" at step_seq 9 names no stored record'],
      ["pruned_through_step_seq = 1, pruned_covered_head = 'd1'", '42501', 'pruned_through_step_seq', 'the pruned anchor only moves forward (pruned_through_step_seq 2 -> 1)'],
      ['pruned_through_step_seq = NULL, pruned_covered_head = NULL', '42501', 'pruned_through_step_seq', 'the pruned anchor only moves forward (pruned_through_step_seq 2 -> none)'],
    ] as const) {
      await refusal(writerDb, `UPDATE kernel_journal_operations SET ${assignment} WHERE operation_id = 'op-heads'`).toMatchObject({
        code,
        table: 'kernel_journal_operations',
        column,
        message: `UPDATE on kernel_journal_operations: operation "op-heads": ${problem}`,
      });
    }
    for (const statement of [
      "UPDATE kernel_journal_operations SET operation_id = 'op-other' WHERE operation_id = 'op-heads'",
      "INSERT INTO kernel_journal_operations (operation_id, head_step_seq, head_digest) VALUES ('op-forged', 9, 'forged')",
      "DELETE FROM kernel_journal_operations WHERE operation_id = 'op-heads'",
      'TRUNCATE kernel_journal_operations CASCADE',
    ]) {
      await expectDenied(statement);
    }
    expect(await storedJournal('op-heads')).toEqual(before);
  });
});

describe('the guards hold for every role, the owner too', () => {
  it('refuses to change stored records and checkpoints, to delete unpruned records, checkpoints or operations, to truncate', async () => {
    await journalWithPrunedPrefix('op-owner');
    const before = await storedJournal('op-owner');
    await refusal(testDb.db, "UPDATE kernel_journal_records SET record_bytes = '\\x00' WHERE operation_id = 'op-owner' AND step_seq = 3").toMatchObject({
      code: '42501',
      table: 'kernel_journal_records',
      column: 'record_bytes',
      message: 'UPDATE on kernel_journal_records: operation "op-owner", step_seq 3: record_bytes never changes',
    });
    await refusal(testDb.db, "UPDATE kernel_journal_checkpoints SET checkpoint_bytes = '\\x00' WHERE operation_id = 'op-owner' AND ordinal = 1").toMatchObject({
      code: '42501',
      table: 'kernel_journal_checkpoints',
      column: 'checkpoint_bytes',
      message: 'UPDATE on kernel_journal_checkpoints: operation "op-owner", ordinal 1: checkpoint_bytes never changes',
    });
    await refusal(testDb.db, "DELETE FROM kernel_journal_records WHERE operation_id = 'op-owner' AND step_seq = 4").toMatchObject({
      code: '42501',
      message: 'DELETE on kernel_journal_records: operation "op-owner", step_seq 4: not pruned (pruned_through_step_seq 2)',
    });
    for (const table of ['kernel_journal_checkpoints', 'kernel_journal_operations']) {
      await refusal(testDb.db, `DELETE FROM ${table} WHERE operation_id = 'op-owner'`).toMatchObject({
        code: '42501',
        table,
        message: `DELETE on ${table}: operation "op-owner": the kernel journal never removes an operation or a checkpoint`,
      });
    }
    for (const table of ['kernel_journal_records', 'kernel_journal_checkpoints']) {
      await refusal(testDb.db, `TRUNCATE ${table}`).toMatchObject({ code: '42501', table, message: `TRUNCATE on ${table}: the kernel journal removes nothing wholesale` });
    }
    await refusal(testDb.db, 'TRUNCATE kernel_journal_operations CASCADE').toMatchObject({ code: '42501', message: expect.stringMatching(/^TRUNCATE on kernel_journal_/) });
    expect(await storedJournal('op-owner')).toEqual(before);
  });

  it("down gives the writer 0008's grants back and drops the guards; up again restores both", async () => {
    await down(testDb.db as unknown as Kysely<unknown>);
    const everything = ['DELETE', 'INSERT', 'SELECT', 'UPDATE'];
    expect(await writerPrivileges()).toEqual({ kernel_journal_checkpoints: everything, kernel_journal_operations: everything, kernel_journal_records: everything });
    const { rows } = await sql`SELECT tgname FROM pg_trigger WHERE tgrelid::regclass::text LIKE 'kernel\\_journal\\_%' AND NOT tgisinternal`.execute(testDb.db);
    expect(rows).toEqual([]);
    await up(testDb.db as unknown as Kysely<unknown>);
    expect(await writerPrivileges()).toEqual(GRANTED_BY_0018);
    await expectDenied("UPDATE kernel_journal_records SET record_bytes = '\\x00'");
  });
});
