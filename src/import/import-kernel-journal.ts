import type { Kysely, Transaction } from 'kysely';
import type { DB } from '../db/schema.js';
import { type JournalHead, lockOperation } from '../session-log/postgres-kernel-journal.js';
import type { Limits } from '../events/limits.js';
import {
  type FolderCheckpoint,
  type FolderRecord,
  InvalidJournalError,
  type JournalOperationFolder,
  journalOperationsOf,
  type OperationState,
  readOperationState,
  recordsOf,
} from './file-kernel-journal.js';

/** Records read, compared and stored at a time: bounds memory whatever the chain's length. */
const RECORDS_PER_CHUNK = 500;

/** What an import found in a journal folder: new, or already stored. */
export interface JournalCounts {
  /** Operation folders read, whether stored or refused. */
  operations: number;
  newRecords: number;
  /** Records already stored (or pruned from the stored chain since). */
  existingRecords: number;
  newCheckpoints: number;
  existingCheckpoints: number;
  newAcknowledgements: number;
  /** Pruned anchors stored, or moved forward. */
  newAnchors: number;
  newOutboundEnvelopes: number;
}

export interface JournalImportReport extends JournalCounts {
  /** Operations refused, each with why; nothing of them was stored. */
  failures: { source: string; message: string }[];
  /** Entries of the journal folder that are no operation's folder. */
  ignoredEntries: string[];
}

/**
 * Imports the v0.2.60 SDK's `FileKernelJournal` folder (see `file-kernel-journal.ts`) into the
 * kernel journal tables of `PostgresKernelJournal`, keeping its guarantees. Each operation is one
 * transaction, under the lock of its row (as every compare-and-set of the journal):
 *
 * - its chain must link (dense step_seqs, each previous digest the one before, from the genesis
 *   or the pruned anchor), or the operation is refused with an error naming the file;
 * - records and checkpoints are stored with their bytes verbatim, acknowledgements, the pruned
 *   anchor and a staged outbound envelope carried over;
 * - what is already stored is compared, not stored again: importing the same folder again stores
 *   nothing new, and a folder whose chain has grown since adds what is new. A record, checkpoint,
 *   anchor or envelope stored otherwise is a conflict naming the operation and the file.
 *
 * Nothing is deleted: records the folder pruned since they were stored stay until the runtime
 * prunes them through the journal. A file larger than `limits` allow refuses its operation.
 */
export async function importKernelJournal(db: Kysely<DB>, root: string, limits: Limits = {}): Promise<JournalImportReport> {
  const { operations, ignoredEntries } = await journalOperationsOf(root, limits);
  const report: JournalImportReport = { ...noCounts(), operations: operations.length, failures: [], ignoredEntries };
  for (const operation of operations) {
    try {
      const counts = await db.transaction().execute((trx) => importOperation(trx, operation));
      for (const key of Object.keys(counts) as (keyof JournalCounts)[]) report[key] += counts[key];
    } catch (error) {
      if (!(error instanceof InvalidJournalError)) throw error;
      report.failures.push({ source: error.file, message: error.message });
    }
  }
  return report;
}

async function importOperation(trx: Transaction<DB>, operation: JournalOperationFolder): Promise<JournalCounts> {
  const state = await readOperationState(operation);
  const counts = noCounts();
  if (holdsNothing(state)) return counts;
  const row = await lockOperation(trx, operation.operationId);
  const storedHead: JournalHead | undefined = row.head_digest === null ? undefined : { step_seq: row.head_step_seq!, record_digest: row.head_digest };
  const storedAnchorThrough = row.pruned_through_step_seq ?? -1;

  let head = storedHead;
  for await (const records of recordsOf(state, RECORDS_PER_CHUNK)) {
    head = await mergeRecords(trx, operation.operationId, records, head, storedAnchorThrough, counts);
  }
  // A chain pruned whole has its anchor for head, as in the journal.
  if (head === undefined && state.anchor !== undefined) head = { step_seq: state.anchor.through_step_seq, record_digest: state.anchor.covered_head };
  await mergeAnchor(trx, state, row, head, counts);
  if (head !== undefined && (storedHead === undefined || head.step_seq > storedHead.step_seq)) {
    await trx
      .updateTable('kernel_journal_operations')
      .set({ head_step_seq: head.step_seq, head_digest: head.record_digest })
      .where('operation_id', '=', operation.operationId)
      .execute();
  }
  await mergeCheckpoints(trx, state, counts);
  await mergeOutbound(trx, state, row.outbound_envelope, counts);
  return counts;
}

/**
 * Compares records with the stored ones of the same step_seq and stores those past the stored
 * head, which must continue it; returns the new head.
 */
async function mergeRecords(
  trx: Transaction<DB>,
  operationId: string,
  records: readonly FolderRecord[],
  head: JournalHead | undefined,
  storedAnchorThrough: number,
  counts: JournalCounts,
): Promise<JournalHead | undefined> {
  const stored = new Map(
    (
      await trx
        .selectFrom('kernel_journal_records')
        .select(['step_seq', 'record_digest', 'previous_record_digest', 'record_bytes'])
        .where('operation_id', '=', operationId)
        .where('step_seq', '>=', records[0]!.step_seq)
        .where('step_seq', '<=', records.at(-1)!.step_seq)
        .execute()
    ).map((row) => [row.step_seq, row]),
  );
  const fresh: FolderRecord[] = [];
  for (const record of records) {
    const conflict = (reason: string) => new InvalidJournalError(record.file, operationId, `conflict: ${reason}`);
    const same = stored.get(record.step_seq);
    if (same !== undefined) {
      const identical =
        same.record_digest === record.record_digest &&
        same.previous_record_digest === (record.previous_record_digest ?? null) &&
        same.record_bytes.equals(record.record_bytes);
      if (!identical) throw conflict(`step_seq ${record.step_seq} is stored with another record`);
      counts.existingRecords += 1;
    } else if (head !== undefined && record.step_seq <= head.step_seq) {
      if (record.step_seq > storedAnchorThrough) throw conflict(`step_seq ${record.step_seq} is neither stored nor pruned in the stored chain`);
      counts.existingRecords += 1;
    } else {
      // Without a stored head, the folder's first record starts the chain: it links to the genesis or the folder's anchor.
      if (head !== undefined && record.step_seq !== head.step_seq + 1) {
        throw new InvalidJournalError(
          record.file,
          operationId,
          `the stored chain ends at step_seq ${head.step_seq}, and the folder's records go on only from step_seq ${record.step_seq} (those between are pruned)`,
        );
      }
      if (head !== undefined && record.previous_record_digest !== head.record_digest) {
        throw conflict(`step_seq ${record.step_seq} does not continue the stored chain, whose head is ${JSON.stringify(head.record_digest)}`);
      }
      fresh.push(record);
      head = { step_seq: record.step_seq, record_digest: record.record_digest };
    }
  }
  if (fresh.length > 0) {
    await trx
      .insertInto('kernel_journal_records')
      .values(
        fresh.map((record) => ({
          operation_id: operationId,
          step_seq: record.step_seq,
          record_digest: record.record_digest,
          previous_record_digest: record.previous_record_digest ?? null,
          record_bytes: Buffer.from(record.record_bytes),
        })),
      )
      .execute();
  }
  counts.newRecords += fresh.length;
  return head;
}

/** Stores the folder's pruned anchor when it is further than the stored one, on the stored chain. */
async function mergeAnchor(
  trx: Transaction<DB>,
  state: OperationState,
  row: { pruned_through_step_seq: number | null; pruned_covered_head: string | null },
  head: JournalHead | undefined,
  counts: JournalCounts,
): Promise<void> {
  const { anchor, operation } = state;
  if (anchor === undefined) return;
  const conflict = (reason: string) => new InvalidJournalError(anchor.file, operation.operationId, `conflict: ${reason}`);
  const storedThrough = row.pruned_through_step_seq ?? -1;
  if (storedThrough === anchor.through_step_seq && row.pruned_covered_head !== anchor.covered_head) {
    throw conflict(`the stored chain is pruned through step_seq ${storedThrough} with covered_head ${JSON.stringify(row.pruned_covered_head)}`);
  }
  if (storedThrough >= anchor.through_step_seq) return;
  if (head === undefined || head.step_seq < anchor.through_step_seq) {
    throw new InvalidJournalError(anchor.file, operation.operationId, `pruned through step_seq ${anchor.through_step_seq}, beyond the stored chain's head`);
  }
  const covered = await storedDigestAt(trx, operation.operationId, anchor.through_step_seq, head);
  if (covered !== anchor.covered_head) throw conflict(`covered_head ${JSON.stringify(anchor.covered_head)} is not the stored record_digest of step_seq ${anchor.through_step_seq}`);
  await trx
    .updateTable('kernel_journal_operations')
    .set({ pruned_through_step_seq: anchor.through_step_seq, pruned_covered_head: anchor.covered_head })
    .where('operation_id', '=', operation.operationId)
    .execute();
  counts.newAnchors += 1;
}

/**
 * The record_digest of a step of the stored chain: its record's, or the one the next record
 * names as its previous (a step pruned before it was stored), or the head's.
 */
async function storedDigestAt(trx: Transaction<DB>, operationId: string, stepSeq: number, head: JournalHead): Promise<string | undefined> {
  if (head.step_seq === stepSeq) return head.record_digest;
  const rows = await trx
    .selectFrom('kernel_journal_records')
    .select(['step_seq', 'record_digest', 'previous_record_digest'])
    .where('operation_id', '=', operationId)
    .where('step_seq', 'in', [stepSeq, stepSeq + 1])
    .execute();
  return rows.find((row) => row.step_seq === stepSeq)?.record_digest ?? rows.find((row) => row.step_seq === stepSeq + 1)?.previous_record_digest ?? undefined;
}

/** Compares checkpoints with the stored ones of the same ordinal, stores the others, and carries acknowledgements over. */
async function mergeCheckpoints(trx: Transaction<DB>, state: OperationState, counts: JournalCounts): Promise<void> {
  const { operationId } = state.operation;
  const stored = new Map(
    (await trx.selectFrom('kernel_journal_checkpoints').selectAll().where('operation_id', '=', operationId).execute()).map((row) => [row.ordinal, row]),
  );
  for (const checkpoint of state.checkpoints) {
    const same = stored.get(checkpoint.ordinal);
    if (same === undefined) {
      // Past the stored ones, which have every ordinal below theirs: ordinals stay gap-free.
      await insertCheckpoint(trx, operationId, checkpoint);
      counts.newCheckpoints += 1;
      if (checkpoint.acknowledged) counts.newAcknowledgements += 1;
      continue;
    }
    const identical =
      same.checkpoint_id === checkpoint.checkpoint_id &&
      same.previous_checkpoint_id === (checkpoint.previous_checkpoint_id ?? null) &&
      same.covered_head === checkpoint.covered_head &&
      same.through_step_seq === checkpoint.through_step_seq &&
      same.state_digest === checkpoint.state_digest &&
      same.checkpoint_bytes.equals(checkpoint.checkpoint_bytes);
    if (!identical) throw new InvalidJournalError(checkpoint.file, operationId, `conflict: checkpoint ordinal ${checkpoint.ordinal} is stored as another checkpoint (${JSON.stringify(same.checkpoint_id)})`);
    counts.existingCheckpoints += 1;
    if (checkpoint.acknowledged && !same.acknowledged) {
      await trx.updateTable('kernel_journal_checkpoints').set({ acknowledged: true }).where('operation_id', '=', operationId).where('ordinal', '=', checkpoint.ordinal).execute();
      counts.newAcknowledgements += 1;
    }
  }
}

async function insertCheckpoint(trx: Transaction<DB>, operationId: string, checkpoint: FolderCheckpoint): Promise<void> {
  await trx
    .insertInto('kernel_journal_checkpoints')
    .values({
      operation_id: operationId,
      ordinal: checkpoint.ordinal,
      checkpoint_id: checkpoint.checkpoint_id,
      previous_checkpoint_id: checkpoint.previous_checkpoint_id ?? null,
      covered_head: checkpoint.covered_head,
      through_step_seq: checkpoint.through_step_seq,
      state_digest: checkpoint.state_digest,
      checkpoint_bytes: checkpoint.checkpoint_bytes,
      acknowledged: checkpoint.acknowledged,
    })
    .execute();
}

/** Stores the staged envelope where none is; another one staged is a conflict (the runtime replays it byte for byte). */
async function mergeOutbound(trx: Transaction<DB>, state: OperationState, storedEnvelope: string | null, counts: JournalCounts): Promise<void> {
  const { outbound, operation } = state;
  if (outbound === undefined || storedEnvelope === outbound.envelope) return;
  if (storedEnvelope !== null) throw new InvalidJournalError(outbound.file, operation.operationId, 'conflict: another outbound envelope is staged for this operation');
  await trx.updateTable('kernel_journal_operations').set({ outbound_envelope: outbound.envelope }).where('operation_id', '=', operation.operationId).execute();
  counts.newOutboundEnvelopes += 1;
}

/** An operation folder with nothing left in it (its envelope cleared, say): nothing to store, not even its row. */
function holdsNothing(state: OperationState): boolean {
  return state.recordSeqs.length === 0 && state.checkpoints.length === 0 && state.anchor === undefined && state.outbound === undefined;
}

function noCounts(): JournalCounts {
  return { operations: 0, newRecords: 0, existingRecords: 0, newCheckpoints: 0, existingCheckpoints: 0, newAcknowledgements: 0, newAnchors: 0, newOutboundEnvelopes: 0 };
}
