import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { poolOf } from '../db/open-database.js';
import { sleep } from '../time/sleep.js';
import { isConnectionLoss } from '../db/connection-loss.js';
import { retryOnConnectionLoss } from '../db/retry-on-connection-loss.js';
import { withPinnedConnection } from '../db/pinned-connection.js';
import type { DB } from '../db/schema.js';
import { AppendListener } from './append-listener.js';
import type { Checkpoint } from './checkpoint.js';
import { horizonHasPassed, currentTransactionLimit } from './horizon.js';
import { notificationsArrive } from './notification-probe.js';
import { type HeldLease, Lease, LeaseLostError } from './lease.js';
import { CheckpointMovedError } from './checkpoint-moved-error.js';
import type { Projection } from './projection.js';
import { type BatchConnection, kyselyConnection, onPoolClient, type ServerConnections } from './batch-connection.js';
import { type BatchResult, madeProgress } from './batch-result.js';
import { runBatchStoppingFailures } from './run-batch.js';
import { isStoreDistributed } from '../db/distributed-store.js';
import { DEFAULT_BATCH_SIZE } from './default-batch-size.js';
import type { StoppedSession } from './sql/batch-sql.js';
import { type SessionBehind, sessionsBehind, sessionsStillBehind } from './sessions-behind.js';
import { countOf } from '../text/count-of.js';

/**
 * A projector's name in its lease when none is given: `host:pid:random`. A daemon running
 * several projections uses one for all of them.
 */
export function defaultOwner(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

/** The longest wait between two attempts to reach a database that is down. */
const MAX_RECONNECT_DELAY_MS = 4000;

export interface ProjectorOptions {
  /** Events read per batch (an upper bound: a batch takes what is there); default 50000. */
  batchSize?: number;
  /** The longest wait between two looks at the log when no append was notified; default 1000 ms. */
  pollIntervalMs?: number;
  /** How long a lease lasts without renewal; a standby takes over this long after a crash. Default 5000 ms. */
  leaseTtlMs?: number;
  /**
   * Set events the projection cannot read aside in `projection_errors` instead of stopping
   * their session, and take up again the sessions stopped at one.
   */
  skipInvalid?: boolean;
  /** This projector's name in the lease; default `host:pid:random`. */
  owner?: string;
  /**
   * How long `catchUp` keeps trying after the connection to the database is lost (default
   * 60000 ms); `run` keeps trying as long as it runs.
   */
  connectionRetryMs?: number;
  /**
   * Connection string for LISTEN; without it the projector polls. Straight to PostgreSQL, or
   * through a pooler in session mode: a pooler in transaction mode passes no NOTIFY on.
   */
  listenUrl?: string;
  /** What happens, for logs and metrics. */
  onEvent?: (event: ProjectorEvent) => void;
}

/** What a projector reports as it works. */
export type ProjectorEvent =
  | { type: 'leader'; owner: string; epoch: number }
  | { type: 'standby'; owner: string; reason: string }
  | { type: 'batch'; result: BatchResult; durationMs: number }
  /** A batch stopped sessions: at an event the projection cannot read, at a hole in the log, or where its SQL failed on their events. */
  | { type: 'sessions_stopped'; sessions: StoppedSession[]; count: number }
  | { type: 'retry'; error: Error; delayMs: number }
  /** The database stopped answering (the connection was lost or cannot be made), or answers again. */
  | { type: 'database'; reachable: boolean; error?: Error }
  | { type: 'waiting'; reason: string }
  /** A round of the daemon's loop found nothing to do: it is alive, as leader or standby. */
  | { type: 'idle'; role: 'leader' | 'standby' }
  /** Whether a NOTIFY reaches the daemon's LISTEN (a probe at its start): when not, it finds appends by polling. */
  | { type: 'notifications'; heard: boolean; pollIntervalMs: number };

/**
 * What `Projector.catchUp` did: events folded and set aside, sessions stopped, in how many
 * batches, and where the checkpoint is.
 *
 * @example
 * ```ts
 * const report = await projector.catchUp();
 * console.log(`${report.eventsApplied} events in ${report.batches} batches; ${report.stopped} sessions stopped`);
 * ```
 */
export interface CatchUpReport {
  eventsApplied: number;
  skipped: number;
  /** Sessions stopped during the catch-up (see `projection_blocked_sessions`). */
  stopped: number;
  batches: number;
  checkpoint: Checkpoint | undefined;
  /**
   * Set when another projector held the lease and folded what this catch-up waited for (every
   * session's events as far as its log had reached): that projector's owner.
   */
  foldedByLeaseHolder?: string;
}

/**
 * Keeps a projection up to date: batches of new events folded exactly once, in order, under
 * a lease that lets one projector write at a time among any number of them.
 *
 * @example
 * ```ts
 * const projector = new Projector(db, projection, { listenUrl: process.env.DATABASE_URL });
 * const stop = new AbortController();
 * process.once('SIGTERM', () => stop.abort());
 * await projector.run(stop.signal); // returns after the lease is released
 * ```
 */
export class Projector {
  readonly lease: Lease;
  private readonly options: Required<Omit<ProjectorOptions, 'listenUrl' | 'onEvent' | 'owner' | 'connectionRetryMs'>>;
  private held: HeldLease | null = null;
  /** Whether the last contact with the database worked: its changes are reported once each. */
  private databaseReachable = true;
  /** Whether a pooler shares the server connections under the batches' pool (see `onPoolClient`). */
  private readonly serverConnections: ServerConnections = { shared: false };

  constructor(
    private readonly db: Kysely<DB>,
    readonly projection: Projection,
    private readonly settings: ProjectorOptions = {},
  ) {
    this.options = {
      batchSize: settings.batchSize ?? DEFAULT_BATCH_SIZE,
      pollIntervalMs: settings.pollIntervalMs ?? 1000,
      leaseTtlMs: settings.leaseTtlMs ?? 5000,
      skipInvalid: settings.skipInvalid ?? false,
    };
    const owner = settings.owner ?? defaultOwner();
    this.lease = new Lease(db, projection.name, owner, this.options.leaseTtlMs);
  }

  /** Holds the lease now (taking it if it is free), or returns false. */
  async lead(): Promise<boolean> {
    if (this.held !== null) return true;
    try {
      this.held = await this.lease.tryAcquire();
    } catch (error) {
      if (isConnectionLoss(error)) this.lost(error as Error);
      throw error;
    }
    this.reached();
    if (this.held !== null) this.emit({ type: 'leader', owner: this.lease.owner, epoch: this.held.epoch });
    return this.held !== null;
  }

  /** Runs one batch (one statement); the lease must be held. */
  async step(): Promise<BatchResult> {
    const held = this.held;
    if (held === null) throw new LeaseLostError(this.projection.name, this.lease.owner, 0);
    const started = performance.now();
    try {
      const run = (connection: BatchConnection) => runBatchStoppingFailures(this.db, this.projection, held, this.options, connection);
      const result =
        poolOf(this.db) === undefined
          ? await this.db.connection().execute((db) => run(kyselyConnection(db, { inTransaction: false })))
          : await withPinnedConnection(this.db, ({ client }) => onPoolClient(client, this.serverConnections, run));
      this.reached();
      if (madeProgress(result)) this.emit({ type: 'batch', result, durationMs: performance.now() - started });
      if (result.stoppedCount > 0) this.emit({ type: 'sessions_stopped', sessions: result.stopped, count: result.stoppedCount });
      return result;
    } catch (error) {
      if (error instanceof LeaseLostError || error instanceof CheckpointMovedError) this.standby(error.message);
      else if (isConnectionLoss(error)) this.lost(error as Error);
      else {
        await this.recordError(error as Error);
        // A statement's error does not name the projection, as os-audit's own errors do.
        // Kept as the cause, its SQLSTATE still says what failed.
        if (typeof (error as { code?: unknown }).code === 'string') {
          throw new Error(`projection ${this.projection.name}: batch failed: ${(error as Error).message}`, { cause: error });
        }
      }
      throw error;
    }
  }

  /**
   * Folds every event committed before the call (`project --once`), then releases the lease.
   * Waits while an older transaction is still open. (On Citus a batch reads by seq, not below
   * a horizon: the first batch to find nothing ends it.) While another projector holds the
   * lease (a daemon), returns once that one has folded every session as far as its log had
   * reached when this one found the lease held ({@link CatchUpReport.foldedByLeaseHolder}).
   */
  async catchUp(signal?: AbortSignal): Promise<CatchUpReport> {
    const report: CatchUpReport = { eventsApplied: 0, skipped: 0, stopped: 0, batches: 0, checkpoint: undefined };
    let target: string | null | undefined;
    // A lost connection is tried again from the checkpoint, which only whole batches move.
    await retryOnConnectionLoss(
      async () => {
        target ??= (await isStoreDistributed(this.db)) ? null : await currentTransactionLimit(this.db);
        await this.catchUpTo(target, report, signal);
      },
      {
        retryForMs: this.settings.connectionRetryMs,
        maxDelayMs: MAX_RECONNECT_DELAY_MS,
        signal,
        onRetry: (error, _attempt, delayMs) => this.emit({ type: 'retry', error, delayMs }),
      },
    );
    return report;
  }

  /** {@link catchUp}'s loop: batches until the horizon has passed `target` and a batch finds nothing. */
  private async catchUpTo(target: string | null, report: CatchUpReport, signal?: AbortSignal): Promise<void> {
    // Whether the horizon had passed `target` before the batch now starting: only an empty batch
    // that began after it had can have seen everything committed before the call.
    let horizonPassed = false;
    // What the lease's holder must fold before this run may end without folding it itself.
    let behind: SessionBehind[] | undefined;
    try {
      while (!signal?.aborted) {
        if (!(await this.lead())) {
          behind = behind === undefined ? await sessionsBehind(this.db, this.projection) : await sessionsStillBehind(this.db, this.projection, behind);
          const holder = behind.length === 0 ? await this.lease.holder() : undefined;
          if (holder !== undefined) {
            report.foldedByLeaseHolder = holder;
            return;
          }
          // Sessions of the holder's to fold; or none left, and the lease freed meanwhile: take it.
          if (behind.length === 0) continue;
          this.emit({ type: 'waiting', reason: `another projector holds the lease: waiting for it to fold ${countOf(behind.length, 'session')}` });
          await sleep(this.options.pollIntervalMs, signal);
          continue;
        }
        let result: BatchResult;
        try {
          result = await this.step();
        } catch (error) {
          if (error instanceof LeaseLostError || error instanceof CheckpointMovedError) continue;
          throw error;
        }
        if (madeProgress(result)) {
          report.checkpoint = result.checkpoint ?? report.checkpoint;
          report.batches += 1;
          report.eventsApplied += result.eventsApplied;
          report.skipped += result.skipped;
          report.stopped += result.stoppedCount;
          continue;
        }
        if (horizonPassed || target === null) return;
        horizonPassed = await horizonHasPassed(this.db, target);
        if (horizonPassed) continue;
        this.emit({ type: 'waiting', reason: 'a transaction older than this run is still open (see os-audit status)' });
        await sleep(this.options.pollIntervalMs, signal);
      }
    } finally {
      await this.releaseLease();
    }
  }

  /**
   * The daemon: folds new events as they are appended until `signal` aborts, then releases
   * the lease. Woken by NOTIFY, polling as a fallback; a standby takes over within the lease's
   * time to live when the leader dies. A session the projection cannot go on with stops alone
   * (reported, see `projection_blocked_sessions`); the others go on.
   */
  async run(signal: AbortSignal): Promise<void> {
    const listener = this.settings.listenUrl ? new AppendListener(this.settings.listenUrl, (error) => this.emit({ type: 'retry', error, delayMs: 0 })) : undefined;
    listener?.start();
    // Behind a pooler in transaction mode no NOTIFY arrives: say so rather than poll unheard.
    if (this.settings.listenUrl) void this.probeNotifications(this.settings.listenUrl, signal);
    const idle = (ms: number) => (listener ? listener.wait(ms, signal) : sleep(ms, signal));
    let retryDelayMs = 500;
    try {
      while (!signal.aborted) {
        try {
          if (!(await this.lead())) {
            this.emit({ type: 'idle', role: 'standby' });
            await sleep(Math.min(this.options.pollIntervalMs, this.options.leaseTtlMs / 2), signal);
            continue;
          }
          const result = await this.step();
          retryDelayMs = 500;
          // The next step renews the lease as it starts: no round trip of its own after a wake.
          if (!madeProgress(result)) {
            this.emit({ type: 'idle', role: 'leader' });
            await idle(this.options.pollIntervalMs);
          } else if (listener !== undefined && result.windowCount < this.options.batchSize && result.stoppedCount === 0) {
            // The batch took all there was: what was appended meanwhile was notified, so wait
            // for that rather than look again at once.
            await idle(this.options.pollIntervalMs);
          }
        } catch (error) {
          if (error instanceof LeaseLostError) {
            this.standby(error.message);
          } else if (error instanceof CheckpointMovedError) {
            continue;
          } else {
            // Back soon after the database is: a lost connection is retried every few seconds at most.
            const connectionLost = isConnectionLoss(error);
            this.emit({ type: 'retry', error: error as Error, delayMs: retryDelayMs });
            await sleep(retryDelayMs, signal);
            retryDelayMs = Math.min(retryDelayMs * 2, connectionLost ? MAX_RECONNECT_DELAY_MS : 30_000);
          }
        }
      }
    } finally {
      await listener?.close();
      await this.releaseLease();
    }
  }

  /** Gives the lease up, so that another projector can take over at once. */
  async releaseLease(): Promise<void> {
    if (this.held === null) return;
    const held = this.held;
    this.held = null;
    await this.lease.release(held).catch(() => {});
  }

  private standby(reason: string): void {
    if (this.held === null) return;
    this.held = null;
    this.emit({ type: 'standby', owner: this.lease.owner, reason });
  }

  /**
   * For `os-audit status` in any process: the error of the last failed batch, the daemon's or
   * `project --once`'s, until a batch succeeds. Best effort: the database may be what failed.
   */
  private async recordError(error: Error): Promise<void> {
    await this.db
      .updateTable('projection_checkpoints')
      .set({ last_error: error.message, last_error_at: sql`now()` })
      .where('projection', '=', this.projection.name)
      .execute()
      .catch(() => {});
  }

  private lost(error: Error): void {
    if (!this.databaseReachable) return;
    this.databaseReachable = false;
    this.emit({ type: 'database', reachable: false, error });
  }

  private reached(): void {
    if (this.databaseReachable) return;
    this.databaseReachable = true;
    this.emit({ type: 'database', reachable: true });
  }

  private async probeNotifications(listenUrl: string, signal: AbortSignal): Promise<void> {
    const heard = await notificationsArrive(this.db, listenUrl, { signal });
    if (heard !== undefined && !signal.aborted) this.emit({ type: 'notifications', heard, pollIntervalMs: this.options.pollIntervalMs });
  }

  private emit(event: ProjectorEvent): void {
    this.settings.onEvent?.(event);
  }
}
