import type { Writable } from 'node:stream';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../db/schema.js';
import { exactInteger } from '../db/exact-integer.js';
import { countOf } from '../text/count-of.js';
import { ProgressLine } from './progress-line.js';

/** How often `project --once` logs its progress when stderr is not a terminal. */
export const CATCH_UP_LOG_MS = 5000;

/**
 * The progress of `project --once`, all projections together. On a terminal it is a live line
 * of the events folded of those behind at the start, with the rate and an ETA. Otherwise it is a
 * log line (`event: "progress"`, at info) every {@link CATCH_UP_LOG_MS} ms while it runs. Call
 * {@link done} in a `finally`.
 *
 * @example
 * ```ts
 * const progress = await CatchUpProgress.start(db, io.stderr, log, [projection.name]);
 * try { await projector.catchUp(); } finally { progress.done(); }
 * ```
 */
export class CatchUpProgress {
  private folded = 0;
  private readonly startedAt = performance.now();
  private readonly timer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly line: ProgressLine,
    private readonly log: Logger,
    private behind: number | undefined,
    logEveryMs: number,
  ) {
    if (!line.visible) this.timer = setInterval(() => this.logProgress(), logEveryMs).unref();
  }

  /** Starts showing progress; on a terminal, counts the events behind first (one query). */
  static async start(
    db: Kysely<DB>,
    stream: Writable & { isTTY?: boolean },
    log: Logger,
    projections: readonly string[],
    logEveryMs = CATCH_UP_LOG_MS,
  ): Promise<CatchUpProgress> {
    const line = new ProgressLine(stream, 'projecting');
    return new CatchUpProgress(line, log, line.visible ? await eventsBehind(db, projections) : undefined, logEveryMs);
  }

  /** A batch moved past `events` events of the log. */
  record(events: number): void {
    this.folded += events;
    if (!this.line.visible) return;
    // Events committed after the start may be folded too.
    this.behind = Math.max(this.behind ?? 0, this.folded);
    this.line.update(this.folded, this.behind, describeCatchUp(this.folded, this.behind, performance.now() - this.startedAt));
  }

  done(): void {
    clearInterval(this.timer);
    this.line.done();
  }

  private logProgress(): void {
    const elapsedMs = performance.now() - this.startedAt;
    this.log.info({ event: 'progress', eventsFolded: this.folded, eventsPerSecond: perSecond(this.folded, elapsedMs) }, `catching up: ${describeCatchUp(this.folded, undefined, elapsedMs)}`);
  }
}

/**
 * `1200/5000 events folded, 600 events/s`: how far a catch-up is (without a total when it is
 * not known).
 *
 * @example
 * ```ts
 * describeCatchUp(1200, 5000, 2000); // '1200/5000 events folded, 600 events/s'
 * ```
 */
export function describeCatchUp(folded: number, behind: number | undefined, elapsedMs: number): string {
  const count = behind === undefined ? `${countOf(folded, 'event')} folded` : `${folded}/${countOf(behind, 'event')} folded`;
  return `${count}, ${perSecond(folded, elapsedMs)} events/s`;
}

function perSecond(events: number, elapsedMs: number): number {
  return elapsedMs <= 0 ? 0 : Math.round((events * 1000) / elapsedMs);
}

/** The events the projections are behind, summed, as the view os_projection_lag counts them. */
async function eventsBehind(db: Kysely<DB>, projections: readonly string[]): Promise<number> {
  const row = await db
    .selectFrom('os_projection_lag')
    .select((eb) => eb.fn.sum<string | null>('lag_events').as('behind'))
    .where('projection', 'in', projections)
    .executeTakeFirstOrThrow();
  return exactInteger(row.behind ?? 0);
}
