import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { exactInteger } from '../db/exact-integer.js';
import { atomically, type BatchConnection, kyselyConnection } from './batch-connection.js';
import { failedFoldProblem, isDataError, shortestFailingPrefix, trialFailure } from './stop-failing-session.js';
import type { BatchOptions, BatchResult } from './batch-result.js';
import type { Checkpoint } from './checkpoint.js';
import { type HeldLease, LeaseLostError } from './lease.js';
import { CheckpointMovedError } from './checkpoint-moved-error.js';
import type { Projection } from './projection.js';
import { batchParameters, type BatchOutcome, batchSql, type StoppedSession, stopAtWindowEventSql } from './sql/batch-sql.js';
import { isStoreDistributed } from '../db/distributed-store.js';
import { compileSessionBatch, runSessionBatch, stopSessionFailingOnCitus } from './run-session-batch.js';
import { batchTableStatements } from './register-projections.js';
import { batchTableOf } from './sql/session-batch-sql.js';

/** The statement of a projection's batch, compiled once. */
interface CompiledBatch {
  text: string;
  /** A name for it as a prepared statement: the projection's and a hash of the text. */
  name: string;
}

const compiledBatches = new WeakMap<Projection, CompiledBatch>();

function compiledBatch(db: Kysely<DB>, projection: Projection): CompiledBatch {
  let compiled = compiledBatches.get(projection);
  if (compiled === undefined) {
    const text = batchSql(projection).compile(db).sql;
    compiled = { text, name: `os_audit_batch_${projection.name}_${createHash('sha256').update(text).digest('hex').slice(0, 12)}` };
    compiledBatches.set(projection, compiled);
  }
  return compiled;
}

/**
 * Runs one batch of a projection (see `batchSql`; on Citus, `runSessionBatch`): one statement,
 * exactly once. It runs on `connection`, by default `db` itself, which must then not be inside
 * a transaction. There it is prepared once and planned once when the driver allows.
 *
 * Throws `LeaseLostError` when the lease is gone and {@link CheckpointMovedError} when another
 * writer moved the checkpoint first; nothing of the batch is kept then.
 *
 * @example
 * ```ts
 * const result = await runBatch(db, projection, held, { batchSize: 50_000, skipInvalid: false, leaseTtlMs: 5000 });
 * ```
 */
export async function runBatch(
  db: Kysely<DB>,
  projection: Projection,
  held: HeldLease,
  options: BatchOptions,
  connection: BatchConnection = kyselyConnection(db, { inTransaction: false }),
): Promise<BatchResult> {
  if (await isStoreDistributed(db)) return runSessionBatchRestoringItsTable(db, projection, held, options, connection);
  const compiled = compiledBatch(db, projection);
  const values = batchValues(held, options, options.batchSize);
  let outcome: BatchOutcome;
  try {
    [outcome] = (await connection.query<BatchOutcome>(compiled.text, values, compiled.name)) as [BatchOutcome];
  } catch (error) {
    throw unmetRequirement(error, projection, held) ?? error;
  }
  // A database not opened by os-audit gives bigint columns as strings.
  return {
    windowCount: exactInteger(outcome.window_count),
    eventsApplied: exactInteger(outcome.applied),
    skipped: exactInteger(outcome.skipped),
    stoppedCount: exactInteger(outcome.stopped_count),
    stopped: outcome.stopped,
    resumedCount: exactInteger(outcome.resumed_count),
    checkpoint:
      outcome.end_transaction_id === null || outcome.end_position === null
        ? undefined
        : { transactionId: outcome.end_transaction_id, position: exactInteger(outcome.end_position) },
  };
}

/**
 * {@link runSessionBatch} (Citus). The projection's batch table may be missing: dropped by
 * hand, or the projection's tables made without `migrate`. It then makes the table again as
 * `migrate` does, in a transaction of its own, and runs the batch again. Where it cannot
 * (inside a caller's transaction, or without the right to create it), it throws an error that
 * names the table and says to run `os-audit migrate`. The daemon retries either.
 */
async function runSessionBatchRestoringItsTable(
  db: Kysely<DB>,
  projection: Projection,
  held: HeldLease,
  options: BatchOptions,
  connection: BatchConnection,
): Promise<BatchResult> {
  const batch = compileSessionBatch(db, projection);
  try {
    return await runSessionBatch(batch, projection, held, options, connection);
  } catch (error) {
    const table = batchTableOf(projection);
    const { code, message } = error as { code?: unknown; message?: unknown };
    if (code !== '42P01' || typeof message !== 'string' || !message.includes(`"${table}"`)) throw error;
    const missing = `the batch table ${table} of projection ${projection.name} is missing`;
    if (connection.inTransaction) throw new Error(`${missing}: run os-audit migrate`, { cause: error });
    try {
      await connection.query('BEGIN', []);
      for (const statement of batchTableStatements(db, projection)) await connection.query(statement, []);
      await connection.query('COMMIT', []);
    } catch (failure) {
      await connection.query('ROLLBACK', []).catch(() => {});
      throw new Error(`${missing} and could not be made again (${(failure as Error).message}): run os-audit migrate`, { cause: failure });
    }
    return runSessionBatch(batch, projection, held, options, connection);
  }
}

/**
 * {@link runBatch}, and where the projection's SQL fails on some session's events (a data
 * error), stops that session ({@link stopSessionFailingTheFold}) and runs the batch again, so
 * that every other session goes on. The result counts the sessions stopped so, first.
 */
export async function runBatchStoppingFailures(
  db: Kysely<DB>,
  projection: Projection,
  held: HeldLease,
  options: BatchOptions,
  connection: BatchConnection,
): Promise<BatchResult> {
  const failed: StoppedSession[] = [];
  for (;;) {
    try {
      const result = await atomically(connection, () => runBatch(db, projection, held, options, connection));
      if (failed.length === 0) return result;
      return { ...result, stoppedCount: failed.length + result.stoppedCount, stopped: [...failed, ...result.stopped] };
    } catch (error) {
      if (!isDataError(error)) throw error;
      const stopped = (await isStoreDistributed(db))
        ? await stopSessionFailingOnCitus(compileSessionBatch(db, projection), projection, held, options, connection, error)
        : await stopSessionFailingTheFold(db, projection, held, options, connection, error);
      // Stopping it again would change nothing: the failure lies elsewhere.
      if (failed.some((earlier) => earlier.session_id === stopped.session_id)) throw error;
      failed.push(stopped);
    }
  }
}

/** The statement's parameters for a window of at most `limit` events. */
function batchValues(held: HeldLease, options: BatchOptions, limit: number): unknown[] {
  return batchParameters({ owner: held.owner, epoch: held.epoch, leaseTtlMs: options.leaseTtlMs, limit, skipInvalid: options.skipInvalid });
}

/** The error an unmet `os_audit_require` of a batch stands for (SQLSTATE OA001), if `error` is one. */
function unmetRequirement(error: unknown, projection: Projection, held: HeldLease): Error | undefined {
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (code !== 'OA001' || typeof message !== 'string') return undefined;
  if (message.endsWith('the lease was lost')) return new LeaseLostError(projection.name, held.owner, held.epoch);
  if (message.endsWith('the checkpoint moved under this batch')) return new CheckpointMovedError(projection.name);
  // Not registered, or another version: nothing a retry changes until migrate or rebuild runs.
  return new Error(message);
}


/**
 * After a batch failed on a data error (`error`): finds the shortest window whose batch fails
 * and stops the session of its last event there, so that every other session goes on. It is a
 * fault of the projection's SQL, not of the log: the in-memory fold does not stop there, and
 * `verify` says so. Returns the stopped session.
 *
 * A batch also folds the sessions it takes up again (`skipInvalid`), outside its window. When a
 * batch of no window event fails, no session of the window is to blame: `error` is thrown.
 */
export async function stopSessionFailingTheFold(
  db: Kysely<DB>,
  projection: Projection,
  held: HeldLease,
  options: BatchOptions,
  connection: BatchConnection,
  error: unknown,
): Promise<StoppedSession> {
  const compiled = compiledBatch(db, projection);
  const failureOf = (limit: number) =>
    trialFailure(connection, () =>
      connection.query(compiled.text, batchValues(held, options, limit), compiled.name).catch((failure: unknown) => {
        throw isDataError(failure) ? failure : (unmetRequirement(failure, projection, held) ?? failure);
      }),
    );
  if ((await failureOf(0)) !== undefined) throw error;
  const { length, failure } = await shortestFailingPrefix(options.batchSize, error, failureOf);
  let stopped: StoppedSession | undefined;
  try {
    [stopped] = await connection.query<StoppedSession>(stopAtWindowEventSql(projection).compile(db).sql, [length, failedFoldProblem(failure), held.owner, held.epoch]);
  } catch (stopFailure) {
    throw unmetRequirement(stopFailure, projection, held) ?? stopFailure;
  }
  if (stopped === undefined) throw error;
  return stopped;
}
