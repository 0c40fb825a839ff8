import { hostname } from 'node:os';
import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { type Checkpoint, LOG_START } from './checkpoint.js';
import { Lease } from './lease.js';
import type { Projection } from './projection.js';
import { DEFAULT_BATCH_SIZE } from './default-batch-size.js';
import { kyselyConnection } from './batch-connection.js';
import { SEALED_EVENTS_BY_INDEX } from '../stored-log/sealed-events.js';
import { madeProgress } from './batch-result.js';
import { runBatchStoppingFailures } from './run-batch.js';

export interface RebuildOptions {
  batchSize?: number;
  /** Set unreadable events aside instead of stopping their session. */
  skipInvalid?: boolean;
  /** Called after each batch with the events folded so far. */
  onProgress?: (eventsApplied: number) => void;
}

export interface RebuildReport {
  eventsApplied: number;
  skipped: number;
  /** Sessions stopped: at an event the projection cannot read, at a hole in their log, or where its SQL failed on their events. */
  stopped: number;
  checkpoint: Checkpoint;
}

/** The lease a rebuild holds while it works: long, since it runs in one transaction. */
const REBUILD_LEASE_TTL_MS = 60_000;

/**
 * Folds a projection again from the start of the log, in one transaction: readers keep seeing
 * the old tables until it commits, then the new ones, never a half-built state. It seizes the
 * lease (a running daemon is fenced out and waits), and gives it back when done. Stopped
 * sessions and set-aside events are cleared first, and found again as the log is folded; a
 * session whose events make the projection's SQL fail stops alone here too.
 *
 * @example
 * ```ts
 * const { eventsApplied } = await rebuildProjection(db, projection);
 * ```
 */
export async function rebuildProjection(db: Kysely<DB>, projection: Projection, options: RebuildOptions = {}): Promise<RebuildReport> {
  return db.transaction().execute(async (trx) => {
    const lease = new Lease(trx, projection.name, `rebuild@${hostname()}:${process.pid}`, REBUILD_LEASE_TTL_MS);
    const held = await lease.seize();
    for (const table of projection.tables) await sql`DELETE FROM ${sql.table(table)}`.execute(trx);
    await trx.deleteFrom('projection_errors').where('projection', '=', projection.name).execute();
    await trx.deleteFrom('projection_blocked_sessions').where('projection', '=', projection.name).execute();
    await trx
      .updateTable('projection_checkpoints')
      .set({ transaction_id: LOG_START.transactionId, position: LOG_START.position, epoch: held.epoch, version: projection.version, events_applied: 0, last_error: null, last_error_at: null })
      .where('projection', '=', projection.name)
      .execute();
    const report: RebuildReport = { eventsApplied: 0, skipped: 0, stopped: 0, checkpoint: LOG_START };
    const connection = kyselyConnection(trx, { inTransaction: true });
    await sql.raw(`SET LOCAL ${SEALED_EVENTS_BY_INDEX}`).execute(trx);
    const batchOptions = { batchSize: options.batchSize ?? DEFAULT_BATCH_SIZE, skipInvalid: options.skipInvalid ?? false, leaseTtlMs: REBUILD_LEASE_TTL_MS };
    for (;;) {
      const batch = await runBatchStoppingFailures(trx, projection, held, batchOptions, connection);
      if (!madeProgress(batch)) break;
      report.eventsApplied += batch.eventsApplied;
      report.skipped += batch.skipped;
      report.stopped += batch.stoppedCount;
      report.checkpoint = batch.checkpoint ?? report.checkpoint;
      options.onProgress?.(report.eventsApplied);
    }
    await lease.release(held);
    // Batches commit without waiting for the WAL flush (derived data); a rebuild reported done is durable.
    await sql`SET LOCAL synchronous_commit = on`.execute(trx);
    return report;
  });
}
