import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importLogs } from '../../src/import/import-logs.js';
import { PostgresKernelJournal } from '../../src/session-log/postgres-kernel-journal.js';
import { EventStore } from '../../src/store/event-store.js';
import {
  chainRecord,
  checkpointName,
  copySdkLog,
  operationDir,
  recordName,
  writeChain,
  writeJournalFile,
} from '../support/journal-folder.js';
import { useTempDir } from '../support/log-files.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase({ perTest: true });
const tempDir = useTempDir();
const importFolder = (dir: string) => importLogs(new EventStore(testDb.db), dir);
const journal = () => new PostgresKernelJournal(testDb.db);
const bytesOf = (text: string) => new Uint8Array(Buffer.from(text, 'latin1'));

const NOTHING_NEW = { newRecords: 0, newCheckpoints: 0, newAcknowledgements: 0, newAnchors: 0, newOutboundEnvelopes: 0 };

async function storedRecordCount(): Promise<number> {
  const { count } = await testDb.db.selectFrom('kernel_journal_records').select((eb) => eb.fn.countAll<string>().as('count')).executeTakeFirstOrThrow();
  return Number(count);
}

describe('importing the kernel journal of a v0.2.60 log folder', () => {
  it('carries over what the SDK wrote: records, checkpoints, the acknowledgement, the pruned anchor, the staged envelope', async () => {
    const report = await importFolder(copySdkLog(tempDir()));
    expect(report).toMatchObject({ newEvents: 5, sessions: 2, failures: [], ignoredEntries: [] });
    expect(report.journal).toEqual({
      operations: 2,
      newRecords: 5,
      existingRecords: 0,
      newCheckpoints: 2,
      existingCheckpoints: 0,
      newAcknowledgements: 1,
      newAnchors: 1,
      newOutboundEnvelopes: 1,
    });

    // What FileKernelJournal answers on that folder, PostgresKernelJournal answers now.
    expect(await journal().head('op-alpha')).toEqual({ step_seq: 4, record_digest: 'sha256:alpha-4' });
    expect(await journal().readFrom('op-alpha')).toEqual([
      { step_seq: 3, record_digest: 'sha256:alpha-3', previous_record_digest: 'sha256:alpha-2', record_bytes: bytesOf('alpha record 3\u0000\u00c3\u00bf') },
      { step_seq: 4, record_digest: 'sha256:alpha-4', previous_record_digest: 'sha256:alpha-3', record_bytes: bytesOf('alpha record 4\u0000\u00c3\u00bf') },
    ]);
    expect((await journal().recordsAfter('op-alpha', 'sha256:alpha-2')).map((entry) => entry.step_seq)).toEqual([3, 4]);
    expect(await journal().latestCheckpoint('op-alpha')).toEqual({
      ordinal: 1,
      checkpoint_id: 'ckpt-2',
      previous_checkpoint_id: 'ckpt-1',
      covered_head: 'sha256:alpha-4',
      through_step_seq: 4,
      state_digest: 'state-4',
      checkpoint_bytes: bytesOf('checkpoint through 4'),
      acknowledged: false,
    });
    const first = await testDb.db.selectFrom('kernel_journal_checkpoints').select(['checkpoint_id', 'acknowledged']).where('ordinal', '=', 0).executeTakeFirstOrThrow();
    expect(first).toEqual({ checkpoint_id: 'ckpt-1', acknowledged: true });
    expect(await journal().readOutboundEnvelope('op-alpha')).toBe('{"envelope":"alpha","observed_at_ms":1700000000000}');
    expect((await journal().readFrom('op β/unicode')).map((entry) => [entry.step_seq, [...entry.record_bytes]])).toEqual([
      [0, [0, 255, 0]],
      [1, [1, 255, 0]],
      [2, [2, 255, 0]],
    ]);

    // The runtime goes on where the folder left off.
    await journal().compareAndAppend('op-alpha', 'sha256:alpha-4', { step_seq: 5, record_digest: 'sha256:alpha-5', record_bytes: bytesOf('5') });
    await journal().compareAndInstallCheckpoint('op-alpha', 'ckpt-2', 'sha256:alpha-5', { checkpoint_id: 'ckpt-3', through_step_seq: 5, state_digest: 's5', checkpoint_bytes: bytesOf('c') });
  });

  it('stores nothing new the second time, and says what was already stored', async () => {
    const dir = copySdkLog(tempDir());
    await importFolder(dir);
    const again = await importFolder(dir);
    expect(again).toMatchObject({ newEvents: 0, existingEvents: 5, failures: [] });
    expect(again.journal).toEqual({ operations: 2, ...NOTHING_NEW, existingRecords: 5, existingCheckpoints: 2 });
  });

  it('adds what the runtime wrote since: records, a checkpoint, an acknowledgement, a further pruned anchor', async () => {
    const dir = copySdkLog(tempDir());
    await importFolder(dir);
    writeChain(dir, 'op-alpha', 'sha256:alpha', 5, 6);
    writeJournalFile(dir, 'op-alpha', checkpointName(1, 'ack'), { ordinal: 1, checkpoint_id: 'ckpt-2' });
    writeJournalFile(dir, 'op-alpha', 'pruned.json', { through_step_seq: 4, covered_head: 'sha256:alpha-4' });
    rmSync(path.join(operationDir(dir, 'op-alpha'), recordName(3)));
    rmSync(path.join(operationDir(dir, 'op-alpha'), recordName(4)));
    writeJournalFile(dir, 'op-alpha', checkpointName(2), {
      ordinal: 2,
      checkpoint_id: 'ckpt-3',
      previous_checkpoint_id: 'ckpt-2',
      covered_head: 'sha256:alpha-6',
      through_step_seq: 6,
      state_digest: 'state-6',
      checkpoint_bytes: Buffer.from('through 6').toString('base64'),
    });

    const report = await importFolder(dir);
    expect(report.failures).toEqual([]);
    expect(report.journal).toEqual({
      operations: 2,
      ...NOTHING_NEW,
      newRecords: 2,
      existingRecords: 3,
      newCheckpoints: 1,
      existingCheckpoints: 2,
      newAcknowledgements: 1,
      newAnchors: 1,
    });
    expect(await journal().head('op-alpha')).toEqual({ step_seq: 6, record_digest: 'sha256:alpha-6' });
    expect(await journal().recordsAfter('op-alpha', 'sha256:alpha-4')).toHaveLength(2);
    expect(await journal().latestCheckpoint('op-alpha')).toMatchObject({ checkpoint_id: 'ckpt-3', acknowledged: false });
    // Nothing is deleted: records 3 and 4, pruned from the folder, stay until the runtime prunes them.
    expect((await journal().readFrom('op-alpha')).map((entry) => entry.step_seq)).toEqual([3, 4, 5, 6]);
  });

  it('imports a chain pruned whole: its anchor is its head', async () => {
    const dir = tempDir();
    writeJournalFile(dir, 'op-pruned', 'pruned.json', { through_step_seq: 7, covered_head: 'sha256:p-7' });
    expect((await importFolder(dir)).journal).toMatchObject({ operations: 1, newRecords: 0, newAnchors: 1 });
    expect(await journal().head('op-pruned')).toEqual({ step_seq: 7, record_digest: 'sha256:p-7' });
    expect(await journal().recordsAfter('op-pruned', 'sha256:p-7')).toEqual([]);
    await journal().compareAndAppend('op-pruned', 'sha256:p-7', { step_seq: 8, record_digest: 'sha256:p-8', record_bytes: bytesOf('8') });
  });

  it('checks and stores a long chain a chunk at a time, and stores nothing of it when a late record breaks it', async () => {
    const dir = tempDir();
    writeChain(dir, 'op-long', 'l', 0, 1202);
    expect((await importFolder(dir)).journal).toMatchObject({ operations: 1, newRecords: 1203 });
    expect(await journal().head('op-long')).toEqual({ step_seq: 1202, record_digest: 'l-1202' });

    const broken = tempDir();
    writeChain(broken, 'op-long-broken', 'l', 0, 1202);
    writeJournalFile(broken, 'op-long-broken', recordName(1100), { ...chainRecord('l', 1100), previous_record_digest: 'l-0' });
    expect((await importFolder(broken)).failures[0]!.message).toMatch(/000000001100\.rec: operation "op-long-broken": previous_record_digest "l-0" is not/);
    expect(await journal().head('op-long-broken')).toBeUndefined();
    expect(await storedRecordCount()).toBe(1203);
  });

  it('imports records a crash left behind a pruned anchor, as the SDK still reads them', async () => {
    const dir = tempDir();
    writeChain(dir, 'op-mid-prune', 'm', 1, 4);
    writeJournalFile(dir, 'op-mid-prune', 'pruned.json', { through_step_seq: 2, covered_head: 'm-2' });
    expect((await importFolder(dir)).journal).toMatchObject({ operations: 1, newRecords: 4, newAnchors: 1 });
    expect((await journal().readFrom('op-mid-prune')).map((entry) => entry.step_seq)).toEqual([1, 2, 3, 4]);
    expect((await journal().recordsAfter('op-mid-prune', 'm-2')).map((entry) => entry.step_seq)).toEqual([3, 4]);
  });

  it('follows a symbolic link to an operation folder, as import follows links; a broken one is listed as ignored', async () => {
    const elsewhere = tempDir();
    writeChain(elsewhere, 'op-linked', 'l', 0, 2);
    const dir = tempDir();
    mkdirSync(path.join(dir, 'kernel-journal'));
    const linked = path.basename(operationDir(elsewhere, 'op-linked'));
    symlinkSync(operationDir(elsewhere, 'op-linked'), path.join(dir, 'kernel-journal', linked));
    symlinkSync(path.join(elsewhere, 'nowhere'), path.join(dir, 'kernel-journal', path.basename(operationDir(dir, 'op-broken'))));

    const report = await importFolder(dir);
    expect(report.failures).toEqual([]);
    expect(report.journal).toMatchObject({ operations: 1, newRecords: 3 });
    expect(report.ignoredEntries).toEqual([path.join('kernel-journal', path.basename(operationDir(dir, 'op-broken')))]);
    expect(await journal().head('op-linked')).toEqual({ step_seq: 2, record_digest: 'l-2' });
  });

  it('ignores what a crash leaves, as the SDK does: tmp files and names outside its rules', async () => {
    const dir = copySdkLog(tempDir());
    writeJournalFile(dir, 'op-alpha', 'tmp/5b1d.tmp', 'half a record');
    writeJournalFile(dir, 'op-alpha', 'records/000000000005.rec.tmp', 'half a record');
    writeJournalFile(dir, 'op-alpha', 'records/5.rec', 'not a record name');
    writeJournalFile(dir, 'op-alpha', 'checkpoints/000000000002.ckpt~', 'not a checkpoint name');
    writeJournalFile(dir, 'op-alpha', 'checkpoints/000000000007.ack', 'an acknowledgement of no checkpoint');
    writeFileSync(path.join(dir, 'kernel-journal', 'notes.txt'), 'not an operation');
    mkdirSync(path.join(dir, 'kernel-journal', 'op-b3A=')); // not the SDK's encoding of any id

    const report = await importFolder(dir);
    expect(report.failures).toEqual([]);
    expect(report.ignoredEntries).toEqual([path.join('kernel-journal', 'notes.txt'), path.join('kernel-journal', 'op-b3A=')]);
    expect(report.journal).toMatchObject({ operations: 2, newRecords: 5, newCheckpoints: 2, newAcknowledgements: 1 });
  });
});

describe('refusing an operation whose folder breaks the journal rules, naming the file', () => {
  it.each([
    ['a previous digest that does not link', 2, { ...chainRecord('d', 2), previous_record_digest: 'd-9' }, 'previous_record_digest "d-9" is not the record_digest of step_seq 1, "d-1"'],
    ['a step_seq that disagrees with the name', 2, chainRecord('d', 5), 'step_seq 5 disagrees with the file\'s name'],
    ['bytes that are not base64', 2, { ...chainRecord('d', 2), record_bytes: 'not base64!' }, 'field "record_bytes": expected the bytes in base64'],
    ['a record that is not JSON', 2, '{"step_seq":2,', 'not readable: '],
    ['a genesis with a previous digest', 0, { ...chainRecord('d', 0), previous_record_digest: 'd-x' }, 'the genesis record (step_seq 0) has a previous_record_digest'],
  ])('%s', async (_case, stepSeq, record, reason) => {
    const dir = copySdkLog(tempDir());
    writeChain(dir, 'op-bad', 'd', 0, 3);
    const file = writeJournalFile(dir, 'op-bad', recordName(stepSeq), record);
    const report = await importFolder(dir);
    expect(report.failures).toHaveLength(1);
    expect(report.failures[0]!.source).toBe(file);
    expect(report.failures[0]!.message).toContain(`${file}: operation "op-bad": ${reason}`);
    expect(await journal().head('op-bad')).toBeUndefined();
    expect(report.journal).toMatchObject({ operations: 3, newRecords: 5 });
  });

  it('a staged envelope that is empty or not UTF-8', async () => {
    const dir = tempDir();
    const empty = writeJournalFile(dir, 'op-envelope', 'outbound.json', '');
    expect((await importFolder(dir)).failures[0]!.message).toBe(`${empty}: operation "op-envelope": the staged envelope is empty`);
    writeFileSync(empty, Buffer.from([0x7b, 0xe9, 0x7d]));
    expect((await importFolder(dir)).failures[0]!.message).toBe(`${empty}: operation "op-envelope": not valid UTF-8`);
  });

  it('a file larger than the limit, refused unread; the other operations are stored', async () => {
    const dir = tempDir();
    writeChain(dir, 'op-fine', 'f', 0, 1);
    writeChain(dir, 'op-huge', 'h', 0, 0);
    const huge = writeJournalFile(dir, 'op-huge', recordName(1), chainRecord('h', 1, 'x'.repeat(100_000)));
    const report = await importLogs(new EventStore(testDb.db), dir, { maxEventBytes: 1000, maxSessionIdBytes: 10 });
    expect(report.failures.map((failure) => failure.message)).toEqual([
      `${huge}: operation "op-huge": the file is 133421 bytes, more than 66596 (the limit is maxEventBytes, --max-event-bytes or OS_AUDIT_MAX_EVENT_BYTES, with an envelope's room)`,
    ]);
    expect(await journal().head('op-huge')).toBeUndefined();
    expect(report.journal).toMatchObject({ operations: 2, newRecords: 2 });
  });

  it('a gap in the step_seqs', async () => {
    const dir = tempDir();
    writeChain(dir, 'op-gap', 'g', 0, 1);
    writeChain(dir, 'op-gap', 'g', 3, 4);
    const report = await importFolder(dir);
    expect(report.failures[0]!.message).toBe(`${path.join(operationDir(dir, 'op-gap'), recordName(3))}: operation "op-gap": a gap: step_seq 3 follows 1`);
    expect(await storedRecordCount()).toBe(0);
  });

  it('records that start after a step nothing prunes', async () => {
    const dir = tempDir();
    writeChain(dir, 'op-headless', 'h', 2, 3);
    const report = await importFolder(dir);
    expect(report.failures[0]!.message).toMatch(/op-headless": the records start at step_seq 2, but the steps before it are neither retained nor pruned/);
  });

  it('a checkpoint whose covered_head is not the record at its step, or that skips an ordinal', async () => {
    const dir = tempDir();
    writeChain(dir, 'op-ckpt', 'c', 0, 2);
    const checkpoint = { ordinal: 0, checkpoint_id: 'k0', covered_head: 'c-9', through_step_seq: 1, state_digest: 's', checkpoint_bytes: '' };
    const file = writeJournalFile(dir, 'op-ckpt', checkpointName(0), checkpoint);
    expect((await importFolder(dir)).failures[0]!.message).toBe(`${file}: operation "op-ckpt": covered_head "c-9" is not the record_digest of step_seq 1`);

    rmSync(file);
    const skipping = writeJournalFile(dir, 'op-ckpt', checkpointName(1), { ...checkpoint, ordinal: 1, covered_head: 'c-1' });
    expect((await importFolder(dir)).failures[0]!.message).toBe(`${skipping}: operation "op-ckpt": a gap: checkpoint ordinal 0 is missing`);
    expect(await storedRecordCount()).toBe(0);
  });
});

describe('conflicts with the stored journal', () => {
  it('refuses an operation stored with another chain, naming it, and changes nothing of it', async () => {
    const dir = tempDir();
    await journal().compareAndAppend('op-x', undefined, { step_seq: 0, record_digest: 'x-0', record_bytes: bytesOf('x 0') });
    await journal().compareAndAppend('op-x', 'x-0', { step_seq: 1, record_digest: 'other-1', record_bytes: bytesOf('other') });
    writeChain(dir, 'op-x', 'x', 0, 3);
    const report = await importFolder(dir);
    expect(report.failures).toEqual([
      {
        source: path.join(operationDir(dir, 'op-x'), recordName(1)),
        message: `${path.join(operationDir(dir, 'op-x'), recordName(1))}: operation "op-x": conflict: step_seq 1 is stored with another record`,
      },
    ]);
    expect(await journal().head('op-x')).toEqual({ step_seq: 1, record_digest: 'other-1' });
  });

  it('refuses a chain that cannot continue the stored one, and another staged envelope', async () => {
    const dir = tempDir();
    await journal().compareAndAppend('op-y', undefined, { step_seq: 0, record_digest: 'y-0', record_bytes: bytesOf('y 0') });
    writeJournalFile(dir, 'op-y', 'pruned.json', { through_step_seq: 2, covered_head: 'y-2' });
    writeChain(dir, 'op-y', 'y', 3, 3);
    expect((await importFolder(dir)).failures[0]!.message).toMatch(
      /op-y": the stored chain ends at step_seq 0, and the folder's records go on only from step_seq 3 \(those between are pruned\)/,
    );

    await journal().stageOutboundEnvelope('op-z', '{"a":1}');
    const envelope = writeJournalFile(dir, 'op-z', 'outbound.json', '{"a":2}');
    const report = await importFolder(dir);
    expect(report.failures).toContainEqual({ source: envelope, message: `${envelope}: operation "op-z": conflict: another outbound envelope is staged for this operation` });
    expect(await journal().readOutboundEnvelope('op-z')).toBe('{"a":1}');
  });
});
