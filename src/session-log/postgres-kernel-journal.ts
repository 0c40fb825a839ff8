import type { Kysely, Transaction } from 'kysely';
import { type ConnectionRetry, retryOnConnectionLoss } from '../db/retry-on-connection-loss.js';
import type { DB } from '../db/schema.js';

/** Chain positions stay below this (the SDK's bound, shared across hosts). */
export const MAX_CHAIN_POSITION = 1_000_000_000_000;

/**
 * The CAS precondition did not hold: the journal head (or checkpoint pointer) moved. Retryable.
 *
 * @example
 * ```ts
 * const genesis = { step_seq: 0, record_digest: 'd0', record_bytes: new Uint8Array([1]) };
 * await journal.compareAndAppend('op-1', undefined, genesis);
 * await journal.compareAndAppend('op-1', undefined, genesis);
 * // throws JournalCasConflictError: journal genesis append requires an empty chain, but the operation already has a head
 * ```
 */
export class JournalCasConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JournalCasConflictError';
  }
}

/**
 * The journal contents contradict themselves or the caller's claim. Never retryable.
 *
 * @example
 * ```ts
 * await journal.compareAndAppend('op-1', undefined, { step_seq: 1, record_digest: 'd1', record_bytes: new Uint8Array([1]) });
 * // throws JournalIntegrityError: journal genesis record must have step_seq 0
 * ```
 */
export class JournalIntegrityError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JournalIntegrityError';
  }
}

/**
 * The storage failed: the journal's state is unknown. The database's error is its `cause`.
 *
 * @example
 * ```ts
 * try {
 *   await journal.head('op-1');
 * } catch (error) {
 *   if (error instanceof JournalIoError) console.error('kernel journal unavailable', error.cause);
 * }
 * ```
 */
export class JournalIoError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'JournalIoError';
  }
}

/** What a runtime hands the journal: core's opaque bytes and the identity core gave them. */
export interface JournalRecordInput {
  step_seq: number;
  record_digest: string;
  record_bytes: Uint8Array;
}

/** A stored record; `previous_record_digest` is the head it was appended under (absent on genesis). */
export interface JournalEntry extends JournalRecordInput {
  previous_record_digest?: string;
}

/**
 * The last record of an operation's chain, by position and digest (once every record is
 * pruned, the pruned anchor).
 *
 * @example
 * ```ts
 * await journal.head('op-1'); // { step_seq: 4, record_digest: 'd4' }
 * ```
 */
export interface JournalHead {
  step_seq: number;
  record_digest: string;
}

/**
 * What {@link PostgresKernelJournal.compareAndAppend} gives back: the new head.
 *
 * @example
 * ```ts
 * const head = await journal.compareAndAppend('op-1', 'd4', { step_seq: 5, record_digest: 'd5', record_bytes: new Uint8Array([5]) });
 * head; // { step_seq: 5, record_digest: 'd5' }
 * ```
 */
export type JournalAppendReceipt = JournalHead;

/**
 * A checkpoint as the runtime hands it to {@link PostgresKernelJournal.compareAndInstallCheckpoint}:
 * its id, the step it covers through, core's digest of the state and its opaque bytes.
 *
 * @example
 * ```ts
 * const candidate: CheckpointCandidate = { checkpoint_id: 'ckpt-1', through_step_seq: 4, state_digest: 's4', checkpoint_bytes: new Uint8Array([1]) };
 * await journal.compareAndInstallCheckpoint('op-1', undefined, 'd4', candidate);
 * ```
 */
export interface CheckpointCandidate {
  checkpoint_id: string;
  through_step_seq: number;
  state_digest: string;
  checkpoint_bytes: Uint8Array;
}

/**
 * An installed checkpoint: the candidate, its ordinal (0, 1, … per operation), the digest of the
 * record it covers, the checkpoint installed before it, and whether it is acknowledged (which
 * lets {@link PostgresKernelJournal.pruneAckedPrefix} remove the records it covers).
 *
 * @example
 * ```ts
 * await journal.latestCheckpoint('op-1');
 * // { checkpoint_id: 'ckpt-1', through_step_seq: 4, state_digest: 's4', checkpoint_bytes: Uint8Array [1],
 * //   ordinal: 0, covered_head: 'd4', acknowledged: false }
 * ```
 */
export interface InstalledCheckpoint extends CheckpointCandidate {
  ordinal: number;
  covered_head: string;
  previous_checkpoint_id?: string;
  acknowledged: boolean;
}

/**
 * What {@link PostgresKernelJournal.pruneAckedPrefix} did.
 *
 * @example
 * ```ts
 * await journal.ackCheckpoint('op-1', 'ckpt-1');
 * await journal.pruneAckedPrefix('op-1'); // { pruned_through_step_seq: 4, pruned_count: 5 }
 * ```
 */
export interface JournalPruneReceipt {
  /** Highest `step_seq` no longer retained; -1 when nothing was ever pruned. */
  pruned_through_step_seq: number;
  pruned_count: number;
}

/** Error classes to throw in place of this module's (the SDK's own, say). */
export interface JournalErrorClasses {
  JournalCasConflictError: new (message: string) => Error;
  JournalIntegrityError: new (message: string) => Error;
  JournalIoError: new (message: string, options?: { cause?: unknown }) => Error;
}

type Failure = 'conflict' | 'integrity';

/** A refusal decided inside a transaction; thrown as the configured class outside it. */
class JournalRefusal extends Error {
  constructor(
    readonly failure: Failure,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The runtime's kernel journal (the deepstrike v0.2.60 SDK's `KernelJournal`,
 * `node/src/runtime/kernel-journal.ts`) in PostgreSQL: durable, and atomic across processes,
 * since every compare-and-set runs in a transaction that locks the operation's row.
 *
 * Records and checkpoints are opaque: their bytes are stored verbatim and their digests as the
 * runtime hands them, never computed here. Failures are typed as the SDK types them:
 * {@link JournalCasConflictError} (retry after a rebuild), {@link JournalIntegrityError} (the
 * chain or the caller's claim contradicts itself), {@link JournalIoError} (the database failed;
 * the journal's state is unknown). Give the SDK's own error classes as `errors` and those are
 * thrown instead, for code that tests `instanceof` against them.
 *
 * @example
 * ```ts
 * const journal = new PostgresKernelJournal(openDatabase({ connectionString: process.env.DATABASE_URL! }));
 * await journal.compareAndAppend('op-1', undefined, { step_seq: 0, record_digest: 'd0', record_bytes: new Uint8Array([1]) });
 * await journal.head('op-1'); // { step_seq: 0, record_digest: 'd0' }
 * ```
 */
export class PostgresKernelJournal {
  private readonly errors: JournalErrorClasses;
  private readonly connectionRetry: ConnectionRetry | false;

  constructor(
    private readonly db: Kysely<DB>,
    options: { errors?: JournalErrorClasses | undefined; connectionRetry?: ConnectionRetry | false | undefined } = {},
  ) {
    this.errors = options.errors ?? { JournalCasConflictError, JournalIntegrityError, JournalIoError };
    this.connectionRetry = options.connectionRetry ?? {};
  }

  /**
   * Appends `record` if and only if the operation's head is exactly `expectedHead`
   * (`undefined`: the chain is empty and `record` is its genesis, step 0).
   */
  compareAndAppend(operationId: string, expectedHead: string | undefined, record: JournalRecordInput): Promise<JournalAppendReceipt> {
    return this.run(async (attempt) => {
      checkRecord(record);
      return this.db.transaction().execute(async (trx) => {
        const operation = await lockOperation(trx, operationId);
        const head = operation.head_digest === null ? undefined : { step_seq: operation.head_step_seq!, record_digest: operation.head_digest };
        // The attempt whose answer a lost connection took may have appended it: records are named by their digest.
        if (attempt > 1 && head?.record_digest === record.record_digest && head.step_seq === record.step_seq) return { ...head };
        checkAppendPrecondition(head, expectedHead, record);
        await trx
          .insertInto('kernel_journal_records')
          .values({
            operation_id: operationId,
            step_seq: record.step_seq,
            record_digest: record.record_digest,
            previous_record_digest: expectedHead ?? null,
            record_bytes: Buffer.from(record.record_bytes),
          })
          .execute();
        await trx
          .updateTable('kernel_journal_operations')
          .set({ head_step_seq: record.step_seq, head_digest: record.record_digest })
          .where('operation_id', '=', operationId)
          .execute();
        return { step_seq: record.step_seq, record_digest: record.record_digest };
      });
    });
  }

  /** The head (the pruned anchor once every record is pruned), or `undefined` for an operation without records. */
  head(operationId: string): Promise<JournalHead | undefined> {
    return this.run(async () => {
      const row = await this.db
        .selectFrom('kernel_journal_operations')
        .select(['head_step_seq', 'head_digest'])
        .where('operation_id', '=', operationId)
        .executeTakeFirst();
      return row?.head_digest == null ? undefined : { step_seq: row.head_step_seq!, record_digest: row.head_digest };
    });
  }

  /** The retained records with `step_seq >= fromStepSeq`, in chain order, checked to link up. */
  readFrom(operationId: string, fromStepSeq = 0): Promise<JournalEntry[]> {
    return this.run(() => readChain(this.db, operationId, fromStepSeq));
  }

  /** The records after the one whose digest is `afterHead` (or after the pruned anchor); all of them when `undefined`. */
  recordsAfter(operationId: string, afterHead?: string): Promise<JournalEntry[]> {
    return this.run(async () => {
      if (afterHead === undefined) return readChain(this.db, operationId, 0);
      const record = await this.db
        .selectFrom('kernel_journal_records')
        .select('step_seq')
        .where('operation_id', '=', operationId)
        .where('record_digest', '=', afterHead)
        .orderBy('step_seq')
        .executeTakeFirst();
      if (record !== undefined) return readChain(this.db, operationId, record.step_seq + 1);
      const operation = await this.db
        .selectFrom('kernel_journal_operations')
        .select(['pruned_through_step_seq', 'pruned_covered_head'])
        .where('operation_id', '=', operationId)
        .executeTakeFirst();
      if (operation?.pruned_covered_head === afterHead) return readChain(this.db, operationId, operation.pruned_through_step_seq! + 1);
      throw new JournalRefusal('integrity', 'journal cursor digest names no retained record');
    });
  }

  /**
   * Installs `checkpoint` if and only if the latest installed one is `previousCheckpointId`
   * (`undefined`: none is), and `coveredHead` is the digest of the record at its
   * `through_step_seq` (which need not be the head any more).
   */
  compareAndInstallCheckpoint(
    operationId: string,
    previousCheckpointId: string | undefined,
    coveredHead: string,
    checkpoint: CheckpointCandidate,
  ): Promise<InstalledCheckpoint> {
    return this.run(async (attempt) => {
      checkCandidate(checkpoint);
      return this.db.transaction().execute(async (trx) => {
        const operation = await lockOperation(trx, operationId);
        const latest = await latestCheckpointOf(trx, operationId);
        if (attempt > 1 && latest?.checkpoint_id === checkpoint.checkpoint_id && latest.previous_checkpoint_id === previousCheckpointId) return latest;
        checkCheckpointPrecondition(latest, previousCheckpointId, checkpoint);
        const covered = await trx
          .selectFrom('kernel_journal_records')
          .select('record_digest')
          .where('operation_id', '=', operationId)
          .where('step_seq', '=', checkpoint.through_step_seq)
          .executeTakeFirst();
        const anchored = operation.pruned_through_step_seq === checkpoint.through_step_seq && operation.pruned_covered_head === coveredHead;
        if (covered === undefined && !anchored) throw new JournalRefusal('integrity', 'checkpoint through_step_seq names no retained record');
        if (covered !== undefined && covered.record_digest !== coveredHead) {
          throw new JournalRefusal('integrity', 'checkpoint covered_head does not match the record at its through_step_seq');
        }
        const installed: InstalledCheckpoint = {
          ...checkpoint,
          checkpoint_bytes: Uint8Array.from(checkpoint.checkpoint_bytes),
          ordinal: latest === undefined ? 0 : latest.ordinal + 1,
          covered_head: coveredHead,
          ...(previousCheckpointId === undefined ? {} : { previous_checkpoint_id: previousCheckpointId }),
          acknowledged: false,
        };
        await trx
          .insertInto('kernel_journal_checkpoints')
          .values({
            operation_id: operationId,
            ordinal: installed.ordinal,
            checkpoint_id: checkpoint.checkpoint_id,
            previous_checkpoint_id: previousCheckpointId ?? null,
            covered_head: coveredHead,
            through_step_seq: checkpoint.through_step_seq,
            state_digest: checkpoint.state_digest,
            checkpoint_bytes: Buffer.from(checkpoint.checkpoint_bytes),
          })
          .execute();
        return installed;
      });
    });
  }

  /** The checkpoint installed last, acknowledged or not. */
  latestCheckpoint(operationId: string): Promise<InstalledCheckpoint | undefined> {
    return this.run(() => latestCheckpointOf(this.db, operationId));
  }

  /** Records the acknowledgement that allows pruning up to this checkpoint. Idempotent. */
  ackCheckpoint(operationId: string, checkpointId: string): Promise<InstalledCheckpoint> {
    return this.run(async () => {
      const row = await this.db
        .updateTable('kernel_journal_checkpoints')
        .set({ acknowledged: true })
        .where('operation_id', '=', operationId)
        .where('ordinal', '=', (eb) =>
          eb
            .selectFrom('kernel_journal_checkpoints')
            .select((inner) => inner.fn.max('ordinal').as('ordinal'))
            .where('operation_id', '=', operationId)
            .where('checkpoint_id', '=', checkpointId),
        )
        .returningAll()
        .executeTakeFirst();
      if (row === undefined) throw new JournalRefusal('integrity', 'cannot acknowledge an uninstalled checkpoint');
      return checkpointOf(row);
    });
  }

  /**
   * Removes the records the latest acknowledged checkpoint covers, keeping its boundary as the
   * anchor that `head` and `recordsAfter` still resolve. Nothing while none is acknowledged.
   */
  pruneAckedPrefix(operationId: string): Promise<JournalPruneReceipt> {
    return this.run(() =>
      this.db.transaction().execute(async (trx) => {
        const operation = await trx
          .selectFrom('kernel_journal_operations')
          .select(['pruned_through_step_seq'])
          .where('operation_id', '=', operationId)
          .forUpdate()
          .executeTakeFirst();
        const boundary = await trx
          .selectFrom('kernel_journal_checkpoints')
          .select(['through_step_seq', 'covered_head'])
          .where('operation_id', '=', operationId)
          .where('acknowledged', '=', true)
          .orderBy('ordinal', 'desc')
          .executeTakeFirst();
        const pruned = operation?.pruned_through_step_seq ?? -1;
        if (operation === undefined || boundary === undefined) return { pruned_through_step_seq: pruned, pruned_count: 0 };
        if (pruned < boundary.through_step_seq) {
          await trx
            .updateTable('kernel_journal_operations')
            .set({ pruned_through_step_seq: boundary.through_step_seq, pruned_covered_head: boundary.covered_head })
            .where('operation_id', '=', operationId)
            .execute();
        }
        const deleted = await trx
          .deleteFrom('kernel_journal_records')
          .where('operation_id', '=', operationId)
          .where('step_seq', '<=', boundary.through_step_seq)
          .executeTakeFirst();
        return { pruned_through_step_seq: Math.max(pruned, boundary.through_step_seq), pruned_count: Number(deleted.numDeletedRows) };
      }),
    );
  }

  /** Stages the operation's one outbound envelope (replacing any staged before). */
  stageOutboundEnvelope(operationId: string, envelopeJson: string): Promise<void> {
    return this.run(async () => {
      if (!envelopeJson) throw new JournalRefusal('integrity', 'outbound envelope must not be empty');
      await this.db
        .insertInto('kernel_journal_operations')
        .values({ operation_id: operationId, outbound_envelope: envelopeJson })
        .onConflict((oc) => oc.column('operation_id').doUpdateSet({ outbound_envelope: envelopeJson }))
        .execute();
    });
  }

  /** The staged outbound envelope, exactly as it was staged, or `undefined` when none is. */
  readOutboundEnvelope(operationId: string): Promise<string | undefined> {
    return this.run(async () => {
      const row = await this.db
        .selectFrom('kernel_journal_operations')
        .select('outbound_envelope')
        .where('operation_id', '=', operationId)
        .executeTakeFirst();
      return row?.outbound_envelope ?? undefined;
    });
  }

  /** Clears the staged envelope. Idempotent. */
  clearOutboundEnvelope(operationId: string): Promise<void> {
    return this.run(async () => {
      await this.db.updateTable('kernel_journal_operations').set({ outbound_envelope: null }).where('operation_id', '=', operationId).execute();
    });
  }

  /**
   * Runs `work`, again on a new connection while the connection is lost. Each method is safe to
   * run again: a read, an idempotent write, or a compare-and-set that recognizes its own earlier
   * success. Refusals are thrown as the configured classes, anything else as an I/O failure.
   */
  private async run<T>(work: (attempt: number) => Promise<T>): Promise<T> {
    try {
      return this.connectionRetry === false ? await work(1) : await retryOnConnectionLoss(work, this.connectionRetry);
    } catch (error) {
      if (error instanceof JournalRefusal) {
        throw error.failure === 'conflict' ? new this.errors.JournalCasConflictError(error.message) : new this.errors.JournalIntegrityError(error.message);
      }
      throw new this.errors.JournalIoError(`kernel journal: ${(error as Error).message ?? String(error)}`, { cause: error });
    }
  }
}

/** The operation's row, created if missing, locked until the transaction ends: every CAS is decided under it (an import's too). */
export async function lockOperation(trx: Transaction<DB>, operationId: string) {
  await trx.insertInto('kernel_journal_operations').values({ operation_id: operationId }).onConflict((oc) => oc.doNothing()).execute();
  return trx.selectFrom('kernel_journal_operations').selectAll().where('operation_id', '=', operationId).forUpdate().executeTakeFirstOrThrow();
}

async function readChain(db: Kysely<DB>, operationId: string, fromStepSeq: number): Promise<JournalEntry[]> {
  const rows = await db
    .selectFrom('kernel_journal_records')
    .select(['step_seq', 'record_digest', 'previous_record_digest', 'record_bytes'])
    .where('operation_id', '=', operationId)
    .where('step_seq', '>=', fromStepSeq)
    .orderBy('step_seq')
    .execute();
  const entries = rows.map((row) => ({
    step_seq: row.step_seq,
    record_digest: row.record_digest,
    record_bytes: Uint8Array.from(row.record_bytes),
    ...(row.previous_record_digest === null ? {} : { previous_record_digest: row.previous_record_digest }),
  }));
  for (let i = 1; i < entries.length; i++) {
    if (entries[i]!.step_seq !== entries[i - 1]!.step_seq + 1) {
      throw new JournalRefusal('integrity', `journal chain has a gap: step_seq ${entries[i]!.step_seq} follows ${entries[i - 1]!.step_seq}`);
    }
    if (entries[i]!.previous_record_digest !== entries[i - 1]!.record_digest) {
      throw new JournalRefusal('integrity', 'journal chain digest linkage is not continuous');
    }
  }
  return entries;
}

async function latestCheckpointOf(db: Kysely<DB>, operationId: string): Promise<InstalledCheckpoint | undefined> {
  const row = await db
    .selectFrom('kernel_journal_checkpoints')
    .selectAll()
    .where('operation_id', '=', operationId)
    .orderBy('ordinal', 'desc')
    .executeTakeFirst();
  return row === undefined ? undefined : checkpointOf(row);
}

function checkpointOf(row: {
  ordinal: number;
  checkpoint_id: string;
  previous_checkpoint_id: string | null;
  covered_head: string;
  through_step_seq: number;
  state_digest: string;
  checkpoint_bytes: Buffer;
  acknowledged: boolean;
}): InstalledCheckpoint {
  return {
    checkpoint_id: row.checkpoint_id,
    through_step_seq: row.through_step_seq,
    state_digest: row.state_digest,
    checkpoint_bytes: Uint8Array.from(row.checkpoint_bytes),
    ordinal: row.ordinal,
    covered_head: row.covered_head,
    ...(row.previous_checkpoint_id === null ? {} : { previous_checkpoint_id: row.previous_checkpoint_id }),
    acknowledged: row.acknowledged,
  };
}

function checkChainPosition(value: number, label: string): void {
  if (!Number.isSafeInteger(value) || value < 0 || value >= MAX_CHAIN_POSITION) {
    throw new JournalRefusal('integrity', `${label} must be a non-negative integer below ${MAX_CHAIN_POSITION}`);
  }
}

function checkRecord(record: JournalRecordInput): void {
  checkChainPosition(record.step_seq, 'journal record step_seq');
  if (!record.record_digest) throw new JournalRefusal('integrity', 'journal record requires a record_digest');
  if (!(record.record_bytes instanceof Uint8Array)) throw new JournalRefusal('integrity', 'journal record requires opaque record_bytes');
}

function checkCandidate(checkpoint: CheckpointCandidate): void {
  if (!checkpoint.checkpoint_id) throw new JournalRefusal('integrity', 'checkpoint requires a checkpoint_id');
  checkChainPosition(checkpoint.through_step_seq, 'checkpoint through_step_seq');
  if (!checkpoint.state_digest) throw new JournalRefusal('integrity', 'checkpoint requires a state_digest');
  if (!(checkpoint.checkpoint_bytes instanceof Uint8Array)) throw new JournalRefusal('integrity', 'checkpoint requires opaque checkpoint_bytes');
}

function checkAppendPrecondition(head: JournalHead | undefined, expectedHead: string | undefined, record: JournalRecordInput): void {
  if (expectedHead === undefined) {
    if (head !== undefined) throw new JournalRefusal('conflict', 'journal genesis append requires an empty chain, but the operation already has a head');
    if (record.step_seq !== 0) throw new JournalRefusal('integrity', 'journal genesis record must have step_seq 0');
    return;
  }
  if (head === undefined) throw new JournalRefusal('conflict', 'journal compare-and-append expected a head, but the chain is empty');
  if (head.record_digest !== expectedHead) throw new JournalRefusal('conflict', 'journal head changed before compare-and-append');
  if (record.step_seq !== head.step_seq + 1) {
    throw new JournalRefusal('integrity', `journal record step_seq ${record.step_seq} does not follow head step_seq ${head.step_seq}`);
  }
}

function checkCheckpointPrecondition(latest: InstalledCheckpoint | undefined, previousCheckpointId: string | undefined, checkpoint: CheckpointCandidate): void {
  if (previousCheckpointId === undefined) {
    if (latest !== undefined) throw new JournalRefusal('conflict', 'checkpoint install without a predecessor requires an empty checkpoint pointer');
    return;
  }
  if (latest === undefined) throw new JournalRefusal('conflict', 'checkpoint install named a predecessor, but none is installed');
  if (latest.checkpoint_id !== previousCheckpointId) throw new JournalRefusal('conflict', 'checkpoint pointer changed before compare-and-install');
  if (checkpoint.through_step_seq < latest.through_step_seq) throw new JournalRefusal('integrity', 'checkpoint pointer must advance monotonically');
}
