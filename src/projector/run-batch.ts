import { CompiledQuery, type Kysely } from 'kysely';
import type pg from 'pg';
import { createHash } from 'node:crypto';
import type { DB } from '../db/schema.js';
import type { Checkpoint } from './checkpoint.js';
import { type HeldLease, LeaseLostError } from './lease.js';
import { CheckpointMovedError } from './checkpoint-moved-error.js';
import type { Projection } from './projection.js';
import { batchParameters, type BatchOutcome, batchSql, type StoppedSession, stopAtWindowEventSql } from './sql/batch-sql.js';

export interface BatchOptions {
  /** Events read from the log per batch (the window); bounds time and memory. */
  batchSize: number;
  /** Set unreadable events aside in `projection_errors` instead of stopping their session. */
  skipInvalid: boolean;
  /** How long the lease lasts from this batch on. */
  leaseTtlMs: number;
}

/**
 * What one batch of a projection did (`Projector.step`).
 *
 * @example
 * ```ts
 * const result = await projector.step();
 * console.log(`${result.eventsApplied} events folded; checkpoint at position ${result.checkpoint?.position}`);
 * ```
 */
export interface BatchResult {
  /** Events of the log the batch moved past. */
  windowCount: number;
  /** Events folded (a session's events are folded once, whatever order they are read in). */
  eventsApplied: number;
  /** Unreadable events set aside (`skipInvalid`). */
  skipped: number;
  /** Sessions this batch stopped (the first few of them by name in `stopped`). */
  stoppedCount: number;
  stopped: StoppedSession[];
  /** Sessions stopped earlier that this batch took up again (`skipInvalid`). */
  resumedCount: number;
  /** Where the checkpoint is after the batch (unchanged when `windowCount` is 0). */
  checkpoint: Checkpoint | undefined;
}

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
 * Runs one batch of a projection (see `batchSql`): one statement, exactly once. On a
 * connection of its own (`client`) the statement is prepared once and planned once; otherwise
 * (inside a transaction: a rebuild) it is sent as it is.
 *
 * Throws `LeaseLostError` when the lease is gone and {@link CheckpointMovedError} when another
 * writer moved the checkpoint first; nothing of the batch is kept then.
 */
export async function runBatch(
  db: Kysely<DB>,
  projection: Projection,
  held: HeldLease,
  options: BatchOptions,
  client?: pg.ClientBase,
): Promise<BatchResult> {
  const compiled = compiledBatch(db, projection);
  const values = batchParameters({ owner: held.owner, epoch: held.epoch, leaseTtlMs: options.leaseTtlMs, limit: options.batchSize, skipInvalid: options.skipInvalid });
  let outcome: BatchOutcome;
  try {
    outcome =
      client === undefined
        ? (await db.executeQuery<BatchOutcome>(CompiledQuery.raw(compiled.text, values))).rows[0]!
        : (await client.query<BatchOutcome>({ name: compiled.name, text: compiled.text, values })).rows[0]!;
  } catch (error) {
    const message = (error as { message?: unknown }).message;
    if (isRequirement(error) && typeof message === 'string') {
      if (message.endsWith('the lease was lost')) throw new LeaseLostError(projection.name, held.owner, held.epoch);
      throw new CheckpointMovedError(projection.name);
    }
    throw error;
  }
  return {
    windowCount: outcome.window_count,
    eventsApplied: outcome.applied,
    skipped: outcome.skipped,
    stoppedCount: outcome.stopped_count,
    stopped: outcome.stopped,
    resumedCount: outcome.resumed_count,
    checkpoint:
      outcome.end_transaction_id === null || outcome.end_position === null
        ? undefined
        : { transactionId: outcome.end_transaction_id, position: outcome.end_position },
  };
}

/** An `os_audit_require` that did not hold (SQLSTATE OA001). */
function isRequirement(error: unknown): boolean {
  return (error as { code?: unknown }).code === 'OA001';
}

/** SQLSTATE classes 22 (data exception) and 23 (integrity constraint violation): a fault of the data, or of the fold on it. */
export function isDataError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
}

/**
 * After a batch failed on a data error (`error`): finds the first event of the window whose
 * batch fails (trying shorter windows, each rolled back, halving the length) and stops its
 * session at its first unfolded event with the error, so that the next batch passes it over
 * and every other session goes on. A fault of the projection's SQL, not of the log: the
 * in-memory fold does not stop there, and `verify` says so. Returns the stopped session.
 */
export async function stopSessionFailingTheFold(
  client: pg.ClientBase,
  db: Kysely<DB>,
  projection: Projection,
  held: HeldLease,
  options: BatchOptions,
  error: unknown,
): Promise<StoppedSession> {
  const compiled = compiledBatch(db, projection);
  const fails = async (limit: number): Promise<unknown> => {
    await client.query('BEGIN');
    try {
      const values = batchParameters({ owner: held.owner, epoch: held.epoch, leaseTtlMs: options.leaseTtlMs, limit, skipInvalid: options.skipInvalid });
      await client.query({ name: compiled.name, text: compiled.text, values });
      return undefined;
    } catch (failure) {
      if (!isDataError(failure)) throw failure;
      return failure;
    } finally {
      await client.query('ROLLBACK');
    }
  };
  // The shortest failing window: `ok` events pass, `failing` do not.
  let [ok, failing, failure] = [0, options.batchSize, error];
  while (failing - ok > 1) {
    const middle = Math.floor((ok + failing) / 2);
    const found = await fails(middle);
    if (found === undefined) ok = middle;
    else [failing, failure] = [middle, found];
  }
  const message = `the projection's SQL failed on the events of this session: ${(failure as Error).message}`;
  const { rows } = await client.query<StoppedSession>(stopAtWindowEventSql(projection).compile(db).sql, [failing, message]);
  if (rows[0] === undefined) throw error;
  return rows[0];
}
