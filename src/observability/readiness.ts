import { isConnectionLoss } from '../db/connection-loss.js';
import type { ProjectorEvent } from '../projector/projector.js';

/** What `/readyz` answers. */
export interface ReadinessReport {
  ready: boolean;
  /** `starting` until the daemon has reached the database; `leader` while it holds the lease. */
  role: 'starting' | 'leader' | 'standby' | 'stopping';
  /** Why the daemon is not ready. */
  reason?: string;
}

/**
 * Whether a projector daemon is doing its job, from what it reports and from the status reads
 * of its monitor. Ready once it has reached the database, as long as its last contact with
 * the database (a status read, taking the lease, a batch) is at most `staleAfterMs` old, and
 * it is not waiting to retry after an error. Sessions the projection stopped (at an event it
 * cannot read, a hole in their log, or where its SQL failed on their events) do not make it
 * unready: every other session goes on.
 *
 * @example
 * ```ts
 * const readiness = new Readiness({ staleAfterMs: 3 * leaseTtlMs });
 * const projector = new Projector(db, projection, { onEvent: (event) => readiness.record(event) });
 * readiness.recordStatusRead(); // after each successful status read; pass the error when it failed
 * const { ready, reason } = readiness.check();
 * ```
 */
export class Readiness {
  private role: ReadinessReport['role'] = 'starting';
  private lastContactAt: number | undefined;
  /** When the projector's loop last came round (a batch, the lease taken, a round with nothing to do). */
  private lastRoundAt: number | undefined;
  private statusError: Error | undefined;
  private retry: { message: string; delayMs: number; until: number } | undefined;
  /** Set while the projector's connection to the database is lost. */
  private databaseLost: Error | undefined;
  private readonly now: () => number;

  /** `staleAfterMs`: longest silence tolerated, from the database and from the projector's loop. */
  constructor(private readonly options: { staleAfterMs: number; now?: () => number }) {
    this.now = options.now ?? Date.now;
  }

  record(event: ProjectorEvent): void {
    switch (event.type) {
      case 'leader':
        this.role = 'leader';
        this.reached();
        return;
      case 'standby':
        this.role = 'standby';
        return;
      case 'batch':
        this.reached();
        return;
      case 'idle':
        if (this.role === 'starting') this.role = event.role;
        this.reached();
        return;
      case 'database':
        this.databaseLost = event.reachable ? undefined : (event.error ?? new Error('connection lost'));
        return;
      case 'retry':
        // A delay of 0 is the append listener reconnecting: polling carries on meanwhile.
        if (event.delayMs === 0) return;
        // The next attempt comes after the delay; no news from it for another while means it worked.
        this.retry = { message: event.error.message, delayMs: event.delayMs, until: this.now() + event.delayMs + this.options.staleAfterMs };
        return;
    }
  }

  /** A status read of the projection succeeded (no argument) or failed. */
  recordStatusRead(error?: Error): void {
    this.statusError = error;
    if (error === undefined) {
      if (this.role === 'starting') this.role = 'standby';
      this.lastContactAt = this.now();
    }
  }

  /** The daemon is shutting down: not ready any more. */
  stopping(): void {
    this.role = 'stopping';
  }

  check(): ReadinessReport {
    const role = this.role;
    const notReady = (reason: string): ReadinessReport => ({ ready: false, role, reason });
    if (role === 'stopping') return notReady('the daemon is stopping');
    const now = this.now();
    if (this.retry !== undefined && now < this.retry.until) {
      return notReady(`retrying after an error (next attempt after ${this.retry.delayMs} ms): ${this.retry.message}`);
    }
    // Not ready at once while the database is unreachable, not only once silence grows stale.
    const lost = this.databaseLost ?? (isConnectionLoss(this.statusError) ? this.statusError : undefined);
    if (lost !== undefined) return notReady(`the database is unreachable (retrying): ${lost.message}`);
    const lastError = this.statusError ? `: ${this.statusError.message}` : '';
    if (this.lastContactAt === undefined) return notReady(`starting: not connected to the database yet${lastError}`);
    const silentMs = now - this.lastContactAt;
    if (silentMs > this.options.staleAfterMs) return notReady(`no contact with the database for ${Math.round(silentMs / 1000)} s${lastError}`);
    // The database answers the status reads, but the projector itself may be stuck.
    const stuckMs = this.lastRoundAt === undefined ? 0 : now - this.lastRoundAt;
    if (stuckMs > this.options.staleAfterMs) return notReady(`the projector has not come round its loop for ${Math.round(stuckMs / 1000)} s`);
    return { ready: true, role };
  }

  private reached(): void {
    this.retry = undefined;
    this.lastContactAt = this.now();
    this.lastRoundAt = this.lastContactAt;
  }
}
