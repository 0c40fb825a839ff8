import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { PinnedConnection } from '../db/pinned-connection.js';
import { type PreparedStatement, preparedStatement } from '../db/prepared-statement.js';
import type { DB } from '../db/schema.js';
import { runScript } from '../db/statement-script.js';
import type { Checkpoint } from './checkpoint.js';
import { type HeldLease, type Lease, LeaseLostError } from './lease.js';
import { CheckpointMovedError, ProjectionHaltedError } from './projection-halted-error.js';
import type { Projection } from './projection.js';
import {
  type BatchInspection,
  beginBatchSql,
  checkpointTargetSql,
  completeBatchSql,
  defaultPlannerSettingsSql,
  createBatchTableSql,
  fillBatchSql,
  foldBatchSql,
  foldWindowSql,
  inspectBatchSql,
  measureBatchSql,
  moveCheckpointSql,
  moveCheckpointToBatchEndSql,
  recheckBatchSql,
  recordSkippedSql,
  requireSimpleBatchSql,
  type SimpleBatchEnd,
  simpleBatchSettingsSql,
} from './sql/batch-sql.js';

/**
 * Batches up to this size (the daemon's live batches) run the fold as a statement prepared
 * once per connection: planning it would take most of such a batch's time. Larger ones (a
 * catch-up) are planned for their own size.
 */
export const PREPARED_FOLD_UP_TO = 1000;

export interface BatchOptions {
  /** Events read from the log per batch (the window); bounds time and memory. */
  batchSize: number;
  /** Set poison events aside in `projection_errors` instead of stopping. */
  skipInvalid: boolean;
}

export interface BatchResult {
  /** Events of the log the batch moved past. */
  windowCount: number;
  /** Events folded (a session's events are folded once, whatever order they are read in). */
  eventsApplied: number;
  /** Poison events set aside. */
  skipped: number;
  checkpoint: Checkpoint;
}

/**
 * Runs one batch of a projection inside the caller's transaction, exactly once: renews (and
 * locks) the lease, reads the window after the checkpoint, folds it, and moves the checkpoint
 * by compare-and-set in the same transaction. A few statements, whatever the batch size.
 *
 * The window is first folded in one statement straight from the log ({@link foldWindowSql});
 * when it is not that simple (a poison event, a hole, events committed out of order), it goes
 * through the batch table, step by step.
 *
 * Throws {@link ProjectionHaltedError} on a poison event (unless `skipInvalid`) or a hole in
 * a log, {@link CheckpointMovedError} when another writer got there first, and
 * `LeaseLostError` when the lease is gone; the caller rolls the transaction back.
 */
export async function runBatch(
  db: Kysely<DB>,
  projection: Projection,
  lease: Lease,
  held: HeldLease,
  options: BatchOptions,
): Promise<BatchResult> {
  const fold = foldStatement(db, projection);
  const start = (await beginBatchSql(projection.name, held, lease.ttlMs, fold).execute(db)).rows[0];
  if (start === undefined) throw new Error(`projection ${projection.name} has no checkpoint row: run os-audit migrate`);
  if (!start.renewed) throw new LeaseLostError(projection.name, held.owner, held.epoch);
  const from: Checkpoint = { transactionId: start.transaction_id, position: start.position };
  // Both kept for the connection's next batches, live ones in one trip included.
  if (!start.has_batch_table) await createBatchTableSql().execute(db);
  if (!start.has_prepared_fold) await fold.prepare.execute(db);

  const direct = await underSavepoint(db, foldWindowSql(projection, from, options.batchSize));
  const window = 'rows' in direct ? direct.rows[0]! : undefined;
  if (window?.window_count === 0) return { windowCount: 0, eventsApplied: 0, skipped: 0, checkpoint: from };
  if (window?.folded && window.end_transaction_id !== null && window.end_position !== null) {
    const to: Checkpoint = { transactionId: window.end_transaction_id, position: window.end_position };
    await moveCheckpoint(db, projection, from, to, window.window_count, held);
    return { windowCount: window.window_count, eventsApplied: window.window_count, skipped: 0, checkpoint: to };
  }

  await fillBatchSql(projection, from, options.batchSize).execute(db);
  const extent = (await measureBatchSql(start).execute(db)).rows[0]!;
  if (extent.window_count === 0 || extent.end_transaction_id === null || extent.end_position === null) {
    return { windowCount: 0, eventsApplied: 0, skipped: 0, checkpoint: from };
  }
  let inspection: BatchInspection = { batch_count: extent.window_count, jump: null, poison: null };
  if (extent.incomplete) await completeBatchSql(projection).execute(db);
  if (extent.incomplete || extent.has_poison) inspection = (await inspectBatchSql().execute(db)).rows[0]!;
  stopOnHole(projection, inspection);
  let skipped = await setPoisonAside(db, projection, inspection, options);
  const foldBatch = inspection.batch_count <= PREPARED_FOLD_UP_TO ? fold.execute : foldBatchSql(projection);
  const folded = await underSavepoint(db, foldBatch);
  if ('refused' in folded) {
    // A row marked as checked at the door could not be folded: check every row, then retry.
    await recheckBatchSql(projection).execute(db);
    inspection = (await inspectBatchSql().execute(db)).rows[0]!;
    if (inspection.poison === null) throw folded.refused;
    skipped = await setPoisonAside(db, projection, inspection, options);
    await foldBatch.execute(db);
  }

  const to: Checkpoint = { transactionId: extent.end_transaction_id, position: extent.end_position };
  await moveCheckpoint(db, projection, from, to, inspection.batch_count - skipped, held);
  return { windowCount: extent.window_count, eventsApplied: inspection.batch_count - skipped, skipped, checkpoint: to };
}

/** Moves the checkpoint from `from` to `to` under the lease, or throws {@link CheckpointMovedError}. */
async function moveCheckpoint(db: Kysely<DB>, projection: Projection, from: Checkpoint, to: Checkpoint, eventsApplied: number, held: HeldLease): Promise<void> {
  const moved = await moveCheckpointSql(projection.name, from, checkpointTargetSql(to, eventsApplied), held).execute(db);
  if (moved.rows.length !== 1) throw new CheckpointMovedError(projection.name);
}

function stopOnHole(projection: Projection, inspection: BatchInspection): void {
  if (inspection.jump === null) return;
  const { session_id, missing_seq, next_stored_seq } = inspection.jump;
  throw new ProjectionHaltedError(
    `projection ${projection.name} stopped: session ${JSON.stringify(session_id)} has a hole in its log: ` +
      `seq ${missing_seq} is missing (the next stored event is seq ${next_stored_seq})`,
    'jump',
    inspection.jump,
  );
}

/** Stops on the batch's first poison event, or (skipInvalid) records them all; returns how many. */
async function setPoisonAside(db: Kysely<DB>, projection: Projection, inspection: BatchInspection, options: BatchOptions): Promise<number> {
  if (inspection.poison === null) return 0;
  if (!options.skipInvalid) {
    const { position, session_id, seq, kind, problem } = inspection.poison;
    throw new ProjectionHaltedError(
      `projection ${projection.name} stopped at position ${position}: session ${JSON.stringify(session_id)}, seq ${seq} ` +
        `(${kind}): ${problem} (run with --skip-invalid to set such events aside in projection_errors)`,
      'poison',
      inspection.poison,
    );
  }
  const result = await recordSkippedSql(projection).execute(db);
  return Number(result.numAffectedRows ?? 0);
}

/**
 * Runs a statement that folds events; when their data made the database refuse, writes nothing
 * and returns the error.
 */
async function underSavepoint<T>(db: Kysely<DB>, statement: RawBuilder<T>): Promise<{ rows: T[] } | { refused: unknown }> {
  await sql`SAVEPOINT os_audit_apply`.execute(db);
  try {
    const { rows } = await statement.execute(db);
    await sql`RELEASE SAVEPOINT os_audit_apply`.execute(db);
    return { rows };
  } catch (error) {
    if (!isDataException(error)) throw error;
    await sql`ROLLBACK TO SAVEPOINT os_audit_apply`.execute(db);
    return { refused: error };
  }
}

/** SQLSTATE classes 22 (data exception) and 23 (integrity constraint violation). */
function isDataException(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
}

const folds = new WeakMap<Projection, PreparedStatement>();

/** The projection's fold of the batch table as a prepared statement (see {@link PREPARED_FOLD_UP_TO}). */
function foldStatement(db: Kysely<DB>, projection: Projection): PreparedStatement {
  let fold = folds.get(projection);
  if (fold === undefined) folds.set(projection, (fold = preparedStatement(db, `${projection.name}_fold`, foldBatchSql(projection))));
  return fold;
}

/**
 * Runs a batch in one round trip when it is a simple one, as live batches are: a script that
 * renews the lease, reads the window after `from` (where the last batch of this projector
 * left the checkpoint), folds it with the prepared fold and moves the checkpoint, then commits.
 * The script requires, before folding, what {@link runBatch} would check and handle on the way
 * (the lease renewed, at most {@link PREPARED_FOLD_UP_TO} events, each session's events
 * continuing its folded ones, no poison) and, before committing, that the checkpoint moved
 * from `from` under this lease. When any of that fails, or the connection lacks the batch
 * table or the prepared fold, nothing is kept and the result is undefined: the caller runs
 * {@link runBatch}, which does the same in steps and says what went wrong.
 */
export async function runBatchInOneTrip(
  connection: PinnedConnection,
  projection: Projection,
  lease: Lease,
  held: HeldLease,
  from: Checkpoint,
  options: BatchOptions,
): Promise<BatchResult | undefined> {
  const { client, db } = connection;
  const script = [
    sql`BEGIN`,
    simpleBatchSettingsSql(),
    fillBatchSql(projection, from, options.batchSize),
    defaultPlannerSettingsSql(),
    requireSimpleBatchSql(projection.name, held, lease.ttlMs, PREPARED_FOLD_UP_TO),
    foldStatement(db, projection).execute,
    moveCheckpointToBatchEndSql(projection.name, from, held),
    sql`COMMIT`,
  ];
  let end: SimpleBatchEnd;
  try {
    const results = await runScript(client, script.map((statement) => statement.compile(db)));
    end = results.at(-2)!.rows[0] as SimpleBatchEnd;
  } catch (error) {
    if (!isServerError(error)) throw error;
    await client.query('ROLLBACK');
    return undefined;
  }
  if (end.transaction_id === null || end.position === null || end.events_applied === null) {
    return { windowCount: 0, eventsApplied: 0, skipped: 0, checkpoint: from };
  }
  const checkpoint: Checkpoint = { transactionId: end.transaction_id, position: end.position };
  return { windowCount: end.events_applied, eventsApplied: end.events_applied, skipped: 0, checkpoint };
}

/** An error the server sent (with its SQLSTATE), as opposed to one of the connection. */
function isServerError(error: unknown): boolean {
  return typeof (error as { code?: unknown }).code === 'string' && typeof (error as { severity?: unknown }).severity === 'string';
}
