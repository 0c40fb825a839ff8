import { sql, type Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { Checkpoint } from './checkpoint.js';
import type { HeldLease, Lease } from './lease.js';
import { CheckpointMovedError, ProjectionHaltedError } from './projection-halted-error.js';
import type { Projection } from './projection.js';
import {
  createBatchSql,
  createWindowSql,
  dropBatchTablesSql,
  moveCheckpointSql,
  recordSkippedSql,
  summarizeBatchSql,
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
  await lease.renew(held, db);
  const from = await readCheckpoint(db, projection.name);
  await createWindowSql(from, options.batchSize).execute(db);
  await createBatchSql(projection).execute(db);
  const summary = (await summarizeBatchSql().execute(db)).rows[0]!;
  if (summary.window_count === 0 || summary.end_transaction_id === null || summary.end_position === null) {
    await dropBatchTablesSql().execute(db);
    return { windowCount: 0, eventsApplied: 0, skipped: 0, checkpoint: from };
  }

  if (summary.jump !== null) {
    const { session_id, missing_seq, next_stored_seq } = summary.jump;
    throw new ProjectionHaltedError(
      `projection ${projection.name} stopped: session ${JSON.stringify(session_id)} has a hole in its log: ` +
        `seq ${missing_seq} is missing (the next stored event is seq ${next_stored_seq})`,
      'jump',
      summary.jump,
    );
  }
  let skipped = 0;
  if (summary.poison !== null) {
    if (!options.skipInvalid) {
      const { position, session_id, seq, kind, problem } = summary.poison;
      throw new ProjectionHaltedError(
        `projection ${projection.name} stopped at position ${position}: session ${JSON.stringify(session_id)}, seq ${seq} ` +
          `(${kind}): ${problem} (run with --skip-invalid to set such events aside in projection_errors)`,
        'poison',
        summary.poison,
      );
    }
    const result = await recordSkippedSql(projection).execute(db);
    skipped = Number(result.numAffectedRows ?? 0);
  }

  await projection.apply(db);
  const to: Checkpoint = { transactionId: summary.end_transaction_id, position: summary.end_position };
  const moved = await moveCheckpointSql(projection.name, from, to, held, summary.batch_count).execute(db);
  if (moved.rows.length !== 1) throw new CheckpointMovedError(projection.name);
  await dropBatchTablesSql().execute(db);
  return { windowCount: summary.window_count, eventsApplied: summary.batch_count - skipped, skipped, checkpoint: to };
}

export async function readCheckpoint(db: Kysely<DB>, projection: string): Promise<Checkpoint> {
  const row = await db
    .selectFrom('projection_checkpoints')
    .select([sql<string>`transaction_id::text`.as('transaction_id'), 'position'])
    .where('projection', '=', projection)
    .executeTakeFirst();
  if (row === undefined) throw new Error(`projection ${projection} has no checkpoint row: run os-audit migrate`);
  return { transactionId: row.transaction_id, position: row.position };
}
