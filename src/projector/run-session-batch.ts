import type { Kysely, RawBuilder } from 'kysely';
import type { DB } from '../db/schema.js';
import { exactInteger } from '../db/exact-integer.js';
import { type BatchConnection, undone } from './batch-connection.js';
import { failedFoldProblem, shortestFailingPrefix, trialFailure } from './stop-failing-session.js';
import { type HeldLease, LeaseLostError } from './lease.js';
import type { Projection } from './projection.js';
import type { BatchOptions, BatchResult } from './batch-result.js';
import { type StoppedSession, versionProblem } from './sql/batch-sql.js';
import { SESSION_BATCH_STATEMENTS, workBatchSql } from './sql/session-batch-sql.js';

/** Stopped sessions a batch reports by name; all are in `projection_blocked_sessions`. */
const STOPPED_REPORTED = 10;

/** The statements of a projection's batch on Citus (see `session-batch-sql.ts`), compiled once: each one's text, and the projection's fold statements. */
export type SessionBatch = { readonly [Name in keyof typeof SESSION_BATCH_STATEMENTS]: string } & { readonly fold: readonly string[] };

const compiledBatches = new WeakMap<Projection, SessionBatch>();

/** {@link SessionBatch} of `projection`, compiled on the first call. */
export function compileSessionBatch(db: Kysely<DB>, projection: Projection): SessionBatch {
  let compiled = compiledBatches.get(projection);
  if (compiled === undefined) {
    const text = (builder: RawBuilder<unknown>) => builder.compile(db).sql;
    const statements = Object.entries(SESSION_BATCH_STATEMENTS).map(([name, statement]) => [name, text(statement(projection))]);
    compiled = { ...Object.fromEntries(statements), fold: projection.foldStatements(workBatchSql(projection)).map(text) } as SessionBatch;
    compiledBatches.set(projection, compiled);
  }
  return compiled;
}

/**
 * One batch of a projection on Citus, exactly once: its statements in one transaction (its
 * own, or the caller's when `connection` is in one), which commits on every worker or on
 * none. It renews the lease first, locking its row to the commit, so that batches of one
 * projection never overlap. Then it plans the work (each session's next events, by seq) and
 * reads those events once into the projection's batch table. It stops sessions at a hole or
 * an unreadable event and folds the rest with the projection's statements, which Citus runs
 * on every shard. With `skipInvalid` it sets unreadable events aside. Last it renews the lease
 * again (its time to live counts from the commit) and counts the batch.
 *
 * Throws `LeaseLostError` when the lease is gone; nothing of the batch is kept then.
 */
export async function runSessionBatch(
  batch: SessionBatch,
  projection: Projection,
  held: HeldLease,
  options: BatchOptions,
  connection: BatchConnection,
): Promise<BatchResult> {
  const inOwnTransaction = !connection.inTransaction;
  if (inOwnTransaction) await connection.query('BEGIN', []);
  try {
    const result = await foldWork(batch, projection, held, options, connection, null);
    if (inOwnTransaction) await connection.query('COMMIT', []);
    return result;
  } catch (error) {
    if (inOwnTransaction) await connection.query('ROLLBACK', []).catch(() => {});
    throw error;
  }
}

/** The batch's statements in the transaction open on `connection`, over `sessions` only (null: all). */
async function foldWork(
  batch: SessionBatch,
  projection: Projection,
  held: HeldLease,
  options: BatchOptions,
  connection: BatchConnection,
  sessions: readonly string[] | null,
): Promise<BatchResult> {
  await renewLease(batch, projection, held, options, connection);
  const resumed = options.skipInvalid ? await connection.query<{ session_id: string }>(batch.resumeUnreadable, []) : [];
  await connection.query(batch.planWork, [options.batchSize, sessions]);
  await connection.query(batch.readWork, []);
  const stopped = await connection.query<StoppedSession>(batch.stopSessions, [options.skipInvalid]);
  if (stopped.length > 0) await connection.query(batch.trimWork, []);
  const [size] = await connection.query<{ events: string }>(batch.workSize, []);
  const windowCount = exactInteger(size!.events);
  let skipped = 0;
  if (windowCount > 0) {
    for (const statement of batch.fold) await connection.query(statement, []);
    if (options.skipInvalid) skipped = (await connection.query(batch.setAside, [])).length;
  }
  const applied = windowCount - skipped;
  // Again at the end: the lease then runs its time from the commit, not from the batch's start,
  // so that a batch longer than the TTL (a dozen distributed statements) does not lose it.
  await renewLease(batch, projection, held, options, connection);
  await connection.query(batch.countBatch, [applied, held.epoch]);
  await connection.query(batch.clearWork, []);
  await connection.query(batch.clearBatch, []);
  const stoppedAgain = new Set(stopped.map((stop) => stop.session_id));
  return {
    windowCount,
    eventsApplied: applied,
    skipped,
    stoppedCount: stopped.length,
    stopped: [...stopped].sort((a, b) => (a.session_id < b.session_id ? -1 : 1)).slice(0, STOPPED_REPORTED),
    resumedCount: resumed.filter(({ session_id }) => !stoppedAgain.has(session_id)).length,
    checkpoint: undefined,
  };
}

/** Renews the lease (its row locked to the commit) and checks the projection's version, or throws. */
async function renewLease(batch: SessionBatch, projection: Projection, held: HeldLease, options: BatchOptions, connection: BatchConnection): Promise<void> {
  const [renewed] = await connection.query<{ version: number | null }>(batch.renewLease, [held.owner, held.epoch, options.leaseTtlMs]);
  if (renewed === undefined) throw new LeaseLostError(projection.name, held.owner, held.epoch);
  if (renewed.version !== projection.version) throw new Error(versionProblem(projection, renewed.version));
}

/**
 * After a batch on Citus failed on a data error (`error`): finds the shortest run of the
 * batch's sessions whose batch fails. It stops its last session at its first unfolded event
 * (reason `failed`), so that every other session goes on. That session must fail alone, else
 * `error` is thrown: the failure lies in no single session. Returns the stopped session.
 */
export async function stopSessionFailingOnCitus(
  batch: SessionBatch,
  projection: Projection,
  held: HeldLease,
  options: BatchOptions,
  connection: BatchConnection,
  error: unknown,
): Promise<StoppedSession> {
  const planned = await undone(connection, async () => {
    await renewLease(batch, projection, held, options, connection);
    await connection.query(batch.planWork, [options.batchSize, null]);
    return (await connection.query<{ session_id: string }>(batch.workSessions, [])).map((row) => row.session_id);
  });
  const failureOf = (sessions: readonly string[]) => trialFailure(connection, () => foldWork(batch, projection, held, options, connection, sessions));
  const { length } = await shortestFailingPrefix(planned.length, error, (count) => failureOf(planned.slice(0, count)));
  const suspect = planned[length - 1];
  const failure = suspect === undefined ? undefined : await failureOf([suspect]);
  if (failure === undefined) throw error;
  const inOwnTransaction = !connection.inTransaction;
  if (inOwnTransaction) await connection.query('BEGIN', []);
  try {
    await renewLease(batch, projection, held, options, connection);
    const [stopped] = await connection.query<StoppedSession>(batch.stopFailedSession, [suspect, failedFoldProblem(failure)]);
    if (stopped === undefined) throw error;
    if (inOwnTransaction) await connection.query('COMMIT', []);
    return stopped;
  } catch (stopFailure) {
    if (inOwnTransaction) await connection.query('ROLLBACK', []).catch(() => {});
    throw stopFailure;
  }
}
