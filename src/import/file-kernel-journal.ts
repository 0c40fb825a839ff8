import { type Dirent, promises as fs } from 'node:fs';
import path from 'node:path';
import { hasUnstorableChar } from '../json/storable-json.js';
import { EVENT_LIMIT_HINT, type Limits, maxLineBytes } from '../events/limits.js';
import { type JournalEntry, MAX_CHAIN_POSITION } from '../session-log/postgres-kernel-journal.js';

/*
 * The kernel journal folder of a v0.2.60 log folder (`<dir>/kernel-journal/`), read as the SDK's
 * `FileKernelJournal` reads it (`node/src/runtime/kernel-journal.ts`):
 *
 * ```text
 *   op-<base64url of the operation id>/
 *     records/<12-digit step_seq>.rec      {step_seq, record_digest, previous_record_digest?, record_bytes: base64}
 *     checkpoints/<12-digit ordinal>.ckpt  {ordinal, checkpoint_id, previous_checkpoint_id?, covered_head,
 *                                           through_step_seq, state_digest, checkpoint_bytes: base64}
 *     checkpoints/<12-digit ordinal>.ack   present once that checkpoint is acknowledged
 *     pruned.json                          {through_step_seq, covered_head}: the anchor of a pruned prefix
 *     outbound.json                        the staged outbound envelope, as written
 * ```
 *
 * Anything else (`tmp/`, names that break these rules: what a crash leaves) is ignored, as the
 * SDK ignores it. What breaks the journal's own rules is an {@link InvalidJournalError} naming
 * the file.
 */

/** The name of the journal folder inside a log folder. */
export const KERNEL_JOURNAL_DIR = 'kernel-journal';

const RECORD_NAME = /^(\d{12})\.rec$/;
const CHECKPOINT_NAME = /^(\d{12})\.ckpt$/;
const ACK_NAME = /^(\d{12})\.ack$/;
const OPERATION_NAME = /^op-([A-Za-z0-9_-]*)$/;

/** An operation's folder, or a file of it, breaks the journal's rules, or the stored journal disagrees with it. */
export class InvalidJournalError extends Error {
  constructor(
    readonly file: string,
    readonly operationId: string,
    reason: string,
  ) {
    super(`${file}: operation ${JSON.stringify(operationId)}: ${reason}`);
    this.name = 'InvalidJournalError';
  }
}

export interface JournalOperationFolder {
  operationId: string;
  dir: string;
  /** Bytes a file of the operation may hold: a larger one is refused unread. */
  maxFileBytes: number;
}

export interface PrunedAnchor {
  through_step_seq: number;
  covered_head: string;
}

export interface FolderRecord extends JournalEntry {
  file: string;
}

export interface FolderCheckpoint {
  file: string;
  ordinal: number;
  checkpoint_id: string;
  previous_checkpoint_id?: string;
  covered_head: string;
  through_step_seq: number;
  state_digest: string;
  checkpoint_bytes: Buffer;
  acknowledged: boolean;
}

/** What an operation's folder holds besides its records, which {@link recordsOf} streams. */
export interface OperationState {
  operation: JournalOperationFolder;
  recordSeqs: number[];
  checkpoints: FolderCheckpoint[];
  anchor?: PrunedAnchor & { file: string };
  outbound?: { file: string; envelope: string };
}

/**
 * The operations of a journal folder, and its entries that are none (by name). A symbolic link
 * is followed: one to a folder is an operation's folder like any other. Each file of an
 * operation may be as large as a line of a log (an event of the limit with its envelope).
 */
export async function journalOperationsOf(root: string, limits: Limits = {}): Promise<{ operations: JournalOperationFolder[]; ignoredEntries: string[] }> {
  const entries = (await fs.readdir(root, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
  const operations: JournalOperationFolder[] = [];
  const ignoredEntries: string[] = [];
  for (const entry of entries) {
    const dir = path.join(root, entry.name);
    const operationId = operationIdOf(entry.name);
    if (operationId !== undefined && (await isFolder(dir, entry))) operations.push({ operationId, dir, maxFileBytes: maxLineBytes(limits) });
    else ignoredEntries.push(entry.name);
  }
  return { operations, ignoredEntries };
}

/** Whether an entry is a folder, or a symbolic link to one. */
async function isFolder(entryPath: string, entry: Dirent): Promise<boolean> {
  if (!entry.isSymbolicLink()) return entry.isDirectory();
  return (await fs.stat(entryPath).catch(() => undefined))?.isDirectory() ?? false;
}

/** The id whose folder the SDK names `name`: only the one encoding it would write, so no two folders share an id. */
function operationIdOf(name: string): string | undefined {
  const encoded = OPERATION_NAME.exec(name)?.[1];
  if (encoded === undefined) return undefined;
  const operationId = Buffer.from(encoded, 'base64url').toString('utf8');
  return Buffer.from(operationId, 'utf8').toString('base64url') === encoded ? operationId : undefined;
}

/** Reads and checks an operation's checkpoints, pruned anchor, outbound envelope and the step_seqs of its records. */
export async function readOperationState(operation: JournalOperationFolder): Promise<OperationState> {
  if (hasUnstorableChar(operation.operationId)) {
    throw new InvalidJournalError(operation.dir, operation.operationId, 'the operation id holds U+0000, which PostgreSQL text cannot hold');
  }
  const recordNames = await namesIn(path.join(operation.dir, 'records'));
  return {
    operation,
    recordSeqs: numbersOf(recordNames, RECORD_NAME).sort((a, b) => a - b),
    checkpoints: await readCheckpoints(operation),
    anchor: await readAnchor(operation),
    outbound: await readOutbound(operation),
  };
}

/**
 * The operation's retained records in chain order, `chunkSize` at a time, each checked to link
 * to the one before. Step_seqs have no gap, and each `previous_record_digest` is the digest
 * before it. The first one is the genesis (step 0) or links to the pruned anchor. At the end, each checkpoint
 * is checked to cover a record of this chain (one pruned since cannot be checked).
 */
export async function* recordsOf(state: OperationState, chunkSize: number): AsyncGenerator<FolderRecord[]> {
  const chain = new ChainCheck(state);
  for (let from = 0; from < state.recordSeqs.length; from += chunkSize) {
    const records: FolderRecord[] = [];
    for (const stepSeq of state.recordSeqs.slice(from, from + chunkSize)) records.push(chain.follow(await readRecord(state.operation, stepSeq)));
    yield records;
  }
  chain.end();
}

/** Follows a chain of records and checks it against the anchor and the checkpoints. */
class ChainCheck {
  private last: FolderRecord | undefined;
  /** Checkpoints by the step_seq they cover, until a record at it is met. */
  private readonly uncovered = new Map<number, FolderCheckpoint[]>();

  constructor(private readonly state: OperationState) {
    for (const checkpoint of state.checkpoints) {
      this.uncovered.set(checkpoint.through_step_seq, [...(this.uncovered.get(checkpoint.through_step_seq) ?? []), checkpoint]);
    }
  }

  follow(record: FolderRecord): FolderRecord {
    const fail = (reason: string) => new InvalidJournalError(record.file, this.state.operation.operationId, reason);
    const { anchor } = this.state;
    if (this.last !== undefined) {
      if (record.step_seq !== this.last.step_seq + 1) throw fail(`a gap: step_seq ${record.step_seq} follows ${this.last.step_seq}`);
      if (record.previous_record_digest !== this.last.record_digest) {
        throw fail(`previous_record_digest ${show(record.previous_record_digest)} is not the record_digest of step_seq ${this.last.step_seq}, ${show(this.last.record_digest)}`);
      }
    } else if (record.step_seq === 0) {
      if (record.previous_record_digest !== undefined) throw fail('the genesis record (step_seq 0) has a previous_record_digest');
    } else if (anchor === undefined || anchor.through_step_seq < record.step_seq - 1) {
      throw fail(`the records start at step_seq ${record.step_seq}, but the steps before it are neither retained nor pruned (pruned.json)`);
    } else if (anchor.through_step_seq === record.step_seq - 1 && record.previous_record_digest !== anchor.covered_head) {
      throw fail(`previous_record_digest ${show(record.previous_record_digest)} is not the pruned anchor's covered_head, ${show(anchor.covered_head)}`);
    }
    if (anchor !== undefined && record.step_seq === anchor.through_step_seq && record.record_digest !== anchor.covered_head) {
      throw new InvalidJournalError(anchor.file, this.state.operation.operationId, `covered_head ${show(anchor.covered_head)} is not the record_digest of step_seq ${record.step_seq}`);
    }
    for (const checkpoint of this.uncovered.get(record.step_seq) ?? []) {
      if (checkpoint.covered_head !== record.record_digest) {
        throw new InvalidJournalError(checkpoint.file, this.state.operation.operationId, `covered_head ${show(checkpoint.covered_head)} is not the record_digest of step_seq ${record.step_seq}`);
      }
    }
    this.uncovered.delete(record.step_seq);
    this.last = record;
    return record;
  }

  end(): void {
    const { anchor, operation } = this.state;
    if (anchor !== undefined && this.last !== undefined && this.last.step_seq < anchor.through_step_seq) {
      throw new InvalidJournalError(anchor.file, operation.operationId, `the anchor's step_seq ${anchor.through_step_seq} is beyond the last record, step_seq ${this.last.step_seq}`);
    }
    for (const [stepSeq, checkpoints] of this.uncovered) {
      const atAnchor = anchor?.through_step_seq === stepSeq;
      const prunedBefore = anchor !== undefined && stepSeq < anchor.through_step_seq;
      for (const checkpoint of checkpoints) {
        if (prunedBefore || (atAnchor && checkpoint.covered_head === anchor.covered_head)) continue;
        const reason = atAnchor ? `covered_head ${show(checkpoint.covered_head)} is not the pruned anchor's, ${show(anchor.covered_head)}` : `through_step_seq ${stepSeq} names no record of the chain`;
        throw new InvalidJournalError(checkpoint.file, operation.operationId, reason);
      }
    }
  }
}

async function readRecord(operation: JournalOperationFolder, stepSeq: number): Promise<FolderRecord> {
  const file = path.join(operation.dir, 'records', `${pad(stepSeq)}.rec`);
  const fields = new Fields(file, operation.operationId, await readJsonObject(file, operation));
  if (fields.position('step_seq') !== stepSeq) throw fields.fail(`step_seq ${JSON.stringify(fields.value.step_seq)} disagrees with the file's name`);
  const previous = fields.optionalText('previous_record_digest');
  return {
    file,
    step_seq: stepSeq,
    record_digest: fields.text('record_digest'),
    ...(previous === undefined ? {} : { previous_record_digest: previous }),
    record_bytes: fields.bytes('record_bytes'),
  };
}

/** The checkpoints, by ordinal from 0 without a gap, each naming the one before it and covering no less. */
async function readCheckpoints(operation: JournalOperationFolder): Promise<FolderCheckpoint[]> {
  const dir = path.join(operation.dir, 'checkpoints');
  const names = await namesIn(dir);
  const acknowledged = new Set(numbersOf(names, ACK_NAME));
  const checkpoints: FolderCheckpoint[] = [];
  for (const ordinal of numbersOf(names, CHECKPOINT_NAME).sort((a, b) => a - b)) {
    const file = path.join(dir, `${pad(ordinal)}.ckpt`);
    if (ordinal !== checkpoints.length) throw new InvalidJournalError(file, operation.operationId, `a gap: checkpoint ordinal ${checkpoints.length} is missing`);
    const checkpoint = readCheckpoint(file, operation.operationId, await readJsonObject(file, operation), acknowledged.has(ordinal));
    const fail = (reason: string) => new InvalidJournalError(file, operation.operationId, reason);
    if (checkpoint.ordinal !== ordinal) throw fail(`ordinal ${checkpoint.ordinal} disagrees with the file's name`);
    const previous = checkpoints.at(-1);
    if (checkpoint.previous_checkpoint_id !== previous?.checkpoint_id) {
      throw fail(`previous_checkpoint_id ${show(checkpoint.previous_checkpoint_id)} is not the checkpoint before it, ${show(previous?.checkpoint_id)}`);
    }
    if (previous !== undefined && checkpoint.through_step_seq < previous.through_step_seq) {
      throw fail(`through_step_seq ${checkpoint.through_step_seq} is below the checkpoint before it (${previous.through_step_seq})`);
    }
    checkpoints.push(checkpoint);
  }
  return checkpoints;
}

function readCheckpoint(file: string, operationId: string, object: Record<string, unknown>, acknowledged: boolean): FolderCheckpoint {
  const fields = new Fields(file, operationId, object);
  const previous = fields.optionalText('previous_checkpoint_id');
  return {
    file,
    ordinal: fields.position('ordinal'),
    checkpoint_id: fields.text('checkpoint_id'),
    ...(previous === undefined ? {} : { previous_checkpoint_id: previous }),
    covered_head: fields.text('covered_head'),
    through_step_seq: fields.position('through_step_seq'),
    state_digest: fields.text('state_digest'),
    checkpoint_bytes: fields.bytes('checkpoint_bytes'),
    acknowledged,
  };
}

async function readAnchor(operation: JournalOperationFolder): Promise<OperationState['anchor']> {
  const file = path.join(operation.dir, 'pruned.json');
  const object = await readJsonObject(file, operation).catch(unlessMissing);
  if (object === undefined) return undefined;
  const fields = new Fields(file, operation.operationId, object);
  return { file, through_step_seq: fields.position('through_step_seq'), covered_head: fields.text('covered_head') };
}

/** The staged envelope, as written: the runtime must replay it byte for byte. */
async function readOutbound(operation: JournalOperationFolder): Promise<OperationState['outbound']> {
  const file = path.join(operation.dir, 'outbound.json');
  const bytes = await readBoundedFile(file, operation).catch(unlessMissing);
  if (bytes === undefined) return undefined;
  const fail = (reason: string) => new InvalidJournalError(file, operation.operationId, reason);
  let envelope: string;
  try {
    envelope = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw fail('not valid UTF-8');
  }
  if (envelope === '') throw fail('the staged envelope is empty');
  if (hasUnstorableChar(envelope)) throw fail('the staged envelope holds U+0000, which PostgreSQL text cannot hold');
  return { file, envelope };
}

/** A file of the operation, refused unread when it is larger than the limit. */
async function readBoundedFile(file: string, operation: JournalOperationFolder): Promise<Buffer> {
  const handle = await fs.open(file);
  try {
    const { size } = await handle.stat();
    if (size > operation.maxFileBytes) {
      throw new InvalidJournalError(file, operation.operationId, `the file is ${size} bytes, more than ${operation.maxFileBytes} (${EVENT_LIMIT_HINT}, with an envelope's room)`);
    }
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

async function readJsonObject(file: string, operation: JournalOperationFolder): Promise<Record<string, unknown>> {
  const { operationId } = operation;
  let value: unknown;
  try {
    value = JSON.parse((await readBoundedFile(file, operation)).toString('utf8'));
  } catch (error) {
    if (error instanceof SyntaxError) throw new InvalidJournalError(file, operationId, `not readable: ${error.message}`);
    throw error;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidJournalError(file, operationId, 'expected a JSON object');
  return value as Record<string, unknown>;
}

/** The fields of one journal file, each checked as the journal tables will hold it. */
class Fields {
  constructor(
    private readonly file: string,
    private readonly operationId: string,
    readonly value: Record<string, unknown>,
  ) {}

  fail(reason: string): InvalidJournalError {
    return new InvalidJournalError(this.file, this.operationId, reason);
  }

  /** A step_seq or an ordinal: an integer from 0, below the SDK's bound. */
  position(name: string): number {
    const value = this.value[name];
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value < MAX_CHAIN_POSITION) return value;
    throw this.fail(`field "${name}": expected an integer from 0 below ${MAX_CHAIN_POSITION}, got ${JSON.stringify(value) ?? 'nothing'}`);
  }

  /** A digest or an id: a non-empty string that PostgreSQL text can hold. */
  text(name: string): string {
    const value = this.value[name];
    if (typeof value === 'string' && value !== '' && !hasUnstorableChar(value)) return value;
    throw this.fail(`field "${name}": expected a non-empty string without U+0000, got ${JSON.stringify(value) ?? 'nothing'}`);
  }

  optionalText(name: string): string | undefined {
    return this.value[name] === undefined ? undefined : this.text(name);
  }

  /** Opaque bytes, base64 as the SDK writes them; stored verbatim, so text that does not read back the same is refused. */
  bytes(name: string): Buffer {
    const value = this.value[name];
    const bytes = typeof value === 'string' ? Buffer.from(value, 'base64') : undefined;
    if (bytes !== undefined && bytes.toString('base64') === value) return bytes;
    throw this.fail(`field "${name}": expected the bytes in base64`);
  }
}

/** The names in a folder; none when it does not exist. */
async function namesIn(dir: string): Promise<string[]> {
  return (await fs.readdir(dir).catch(unlessMissing)) ?? [];
}

/** The numbers of the names that match `pattern`; the others are residue. */
function numbersOf(names: readonly string[], pattern: RegExp): number[] {
  return names.flatMap((name) => {
    const match = pattern.exec(name);
    return match === null ? [] : [Number(match[1])];
  });
}

function unlessMissing(error: NodeJS.ErrnoException): undefined {
  if (error.code === 'ENOENT') return undefined;
  throw error;
}

function pad(value: number): string {
  return String(value).padStart(12, '0');
}

function show(value: string | undefined): string {
  return value === undefined ? 'none' : JSON.stringify(value);
}
