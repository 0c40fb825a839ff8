import type { Checkpoint } from './checkpoint.js';
import type { StoppedSession } from './sql/batch-sql.js';

/** How a batch of a projection runs. */
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

/**
 * Whether a batch moved the projection on: it folded or set aside events, or stopped or took up
 * sessions. On Citus a batch whose planned events all belong to sessions it stopped folds none,
 * and the sessions behind them are taken by the next batch.
 */
export function madeProgress(result: BatchResult): boolean {
  return result.windowCount > 0 || result.stoppedCount > 0 || result.resumedCount > 0;
}
