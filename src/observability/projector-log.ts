import type { Logger } from 'pino';
import type { Checkpoint } from '../projector/checkpoint.js';
import type { ProjectorEvent } from '../projector/projector.js';
import { countOf } from '../text/count-of.js';

/** How often batches are summed up in one log line. */
const BATCH_SUMMARY_MS = 5000;

/**
 * Logs what a projector reports, one structured line per fact (field `event` names it:
 * `leader`, `standby`, `sessions_stopped`, `retry`, `listener`, `database`, `notifications`, `waiting`, `projected`, `batch`), with a
 * message a person can read alone. Batches are summed up every five seconds at `info` (or
 * not at all with `summarizeBatches: false`); each is logged at `debug`.
 *
 * @example
 * ```ts
 * const projectorLog = new ProjectorLog(log.child({ owner }), { summarizeBatches: true });
 * const projector = new Projector(db, projection, { onEvent: (event) => projectorLog.record(event) });
 * await projector.run(signal);
 * projectorLog.close(); // logs the last batches
 * ```
 */
export class ProjectorLog {
  private pending = { events: 0, skipped: 0, batches: 0, checkpoint: undefined as Checkpoint | undefined };
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly log: Logger,
    options: { summarizeBatches: boolean },
  ) {
    if (options.summarizeBatches) this.timer = setInterval(() => this.summarize(), BATCH_SUMMARY_MS).unref();
  }

  record(event: ProjectorEvent): void {
    switch (event.type) {
      case 'leader':
        return this.log.info({ event: 'leader', epoch: event.epoch }, `leader: ${event.owner} holds the lease (epoch ${event.epoch})`);
      case 'standby':
        return this.log.warn({ event: 'standby', reason: event.reason }, `standby: ${event.reason}`);
      case 'sessions_stopped': {
        const [first] = event.sessions;
        const more = event.count > 1 ? ` (and ${countOf(event.count - 1, 'more session')}; see os-audit status)` : '';
        return this.log.error(
          { event: 'sessions_stopped', sessions: event.sessions, count: event.count },
          `stopped session ${JSON.stringify(first?.session_id)} at seq ${first?.seq} (${first?.reason}): ${first?.problem}${more}; every other session goes on`,
        );
      }
      case 'retry':
        if (event.delayMs === 0) {
          return this.log.warn({ event: 'listener', error: event.error.message }, `append listener: ${event.error.message}; polling until it reconnects`);
        }
        return this.log.warn({ event: 'retry', delayMs: event.delayMs, err: event.error }, `retrying in ${event.delayMs} ms: ${event.error.message}`);
      case 'database':
        return event.reachable
          ? this.log.info({ event: 'database', reachable: true }, 'the database answers again: carrying on from the checkpoint')
          : this.log.error(
              { event: 'database', reachable: false, error: event.error?.message },
              `lost the database: ${event.error?.message}; retrying until it answers (nothing is folded meanwhile, nothing is lost)`,
            );
      case 'notifications':
        if (event.heard) return this.log.debug({ event: 'notifications', heard: true }, 'LISTEN hears NOTIFY: appends wake the projector');
        return this.log.warn(
          { event: 'notifications', heard: false, pollIntervalMs: event.pollIntervalMs },
          `LISTEN hears no NOTIFY (a pooler in transaction mode, such as PgBouncer, in between?): new events are found by polling every ${event.pollIntervalMs} ms. ` +
            'Give the daemon a connection straight to PostgreSQL for LISTEN: --direct-url or OS_AUDIT_DIRECT_DATABASE_URL',
        );
      case 'waiting':
        return this.log.info({ event: 'waiting', reason: event.reason }, `waiting: ${event.reason}`);
      case 'batch': {
        const { eventsApplied, skipped, checkpoint } = event.result;
        this.log.debug(
          { event: 'batch', events: eventsApplied, skipped, durationMs: Math.round(event.durationMs * 10) / 10, checkpoint },
          `batch of ${countOf(eventsApplied, 'event')} in ${Math.round(event.durationMs)} ms`,
        );
        this.pending.events += eventsApplied;
        this.pending.skipped += skipped;
        this.pending.batches += 1;
        this.pending.checkpoint = checkpoint ?? this.pending.checkpoint;
        return;
      }
    }
  }

  /** Logs the batches not summed up yet and stops the timer. */
  close(): void {
    clearInterval(this.timer);
    if (this.timer !== undefined) this.summarize();
  }

  private summarize(): void {
    const { events, skipped, batches, checkpoint } = this.pending;
    if (batches === 0 || checkpoint === undefined) return;
    this.pending = { events: 0, skipped: 0, batches: 0, checkpoint: undefined };
    const aside = skipped > 0 ? `; ${countOf(skipped, 'event')} set aside in projection_errors` : '';
    this.log.info(
      { event: 'projected', events, skipped, batches, checkpoint },
      `projected ${countOf(events, 'event')} in ${countOf(batches, 'batch', 'batches')}${aside} (checkpoint: transaction ${checkpoint.transactionId}, position ${checkpoint.position})`,
    );
  }
}
