import { sql, type Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { Checkpoint } from './checkpoint.js';
import { type HeldLease, type Lease, LeaseLostError } from './lease.js';
import { CheckpointMovedError, ProjectionHaltedError } from './projection-halted-error.js';
import type { Projection } from './projection.js';
import {
  type BatchInspection,
  beginBatchSql,
  completeBatchSql,
  createBatchTableSql,
  fillBatchSql,
  inspectBatchSql,
  measureBatchSql,
  moveCheckpointSql,
  recheckBatchSql,
  recordSkippedSql,
} from './sql/batch-sql.js';

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
  const start = (await beginBatchSql(projection.name, held, lease.ttlMs).execute(db)).rows[0];
  if (start === undefined) throw new Error(`projection ${projection.name} has no checkpoint row: run os-audit migrate`);
  if (!start.renewed) throw new LeaseLostError(projection.name, held.owner, held.epoch);
  const from: Checkpoint = { transactionId: start.transaction_id, position: start.position };
  if (!start.has_batch_table) await createBatchTableSql().execute(db);
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
  const batch = { events: inspection.batch_count };
  const refused = await tryApply(db, projection, batch);
  if (refused !== undefined) {
    // A row marked as checked at the door could not be folded: check every row, then retry.
    await recheckBatchSql(projection).execute(db);
    inspection = (await inspectBatchSql().execute(db)).rows[0]!;
    if (inspection.poison === null) throw refused;
    skipped = await setPoisonAside(db, projection, inspection, options);
    await projection.apply(db, batch);
  }

  const to: Checkpoint = { transactionId: extent.end_transaction_id, position: extent.end_position };
  const moved = await moveCheckpointSql(projection.name, from, to, held, inspection.batch_count - skipped).execute(db);
  if (moved.rows.length !== 1) throw new CheckpointMovedError(projection.name);
  return { windowCount: extent.window_count, eventsApplied: inspection.batch_count - skipped, skipped, checkpoint: to };
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

/** Folds the batch; when its data made the database refuse, folds nothing and returns the error. */
async function tryApply(db: Kysely<DB>, projection: Projection, batch: { events: number }): Promise<unknown> {
  await sql`SAVEPOINT os_audit_apply`.execute(db);
  try {
    await projection.apply(db, batch);
    await sql`RELEASE SAVEPOINT os_audit_apply`.execute(db);
    return undefined;
  } catch (error) {
    if (!isDataException(error)) throw error;
    await sql`ROLLBACK TO SAVEPOINT os_audit_apply`.execute(db);
    return error;
  }
}

/** SQLSTATE classes 22 (data exception) and 23 (integrity constraint violation). */
function isDataException(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
}
