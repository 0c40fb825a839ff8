import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { ProjectionStatus } from '../projector/projection-status.js';
import type { ProjectorEvent } from '../projector/projector.js';

/** Batch durations from 1 ms to 10 s: a batch of the default size commits in well under a second. */
const BATCH_DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Who the metrics describe: every `os_audit_*` sample carries `projection`; the info metric also `owner`. */
export interface ProjectorMetricsLabels {
  projection: string;
  owner: string;
}

/**
 * A projector daemon's Prometheus metrics, in a registry of their own (with the process's
 * default metrics): counts of what this daemon folded, from its projector events, and the
 * projection's lag, from {@link ProjectionStatus} reads.
 *
 * @example
 * ```ts
 * const metrics = new ProjectorMetrics({ projection: 'os_snapshot', owner: projector.lease.owner });
 * const projector = new Projector(db, osSnapshotProjection, { onEvent: (event) => metrics.record(event) });
 * metrics.recordStatus(await readProjectionStatus(db, 'os_snapshot'));
 * response.end(await metrics.render());
 * ```
 */
export class ProjectorMetrics {
  readonly registry = new Registry();
  readonly contentType = this.registry.contentType;
  private readonly eventsProjected;
  private readonly batches;
  private readonly batchDuration;
  private readonly poisonEvents;
  private readonly lagEvents;
  private readonly lagSeconds;
  private readonly projectionErrors;
  private readonly leader;
  private readonly stoppedSessions;
  private readonly blockedSessions;
  private readonly databaseUp;
  private readonly connectionLosses;
  private readonly notificationsHeard;

  constructor(labels: ProjectorMetricsLabels) {
    collectDefaultMetrics({ register: this.registry });
    const registers = [this.registry];
    const projection = { projection: labels.projection };
    const labelNames = ['projection'] as const;
    this.eventsProjected = new Counter({
      name: 'os_audit_events_projected_total',
      help: 'Events this daemon folded into the projection (events set aside not included).',
      labelNames,
      registers,
    }).labels(projection);
    this.batches = new Counter({
      name: 'os_audit_batches_total',
      help: 'Batches this daemon committed that moved the checkpoint.',
      labelNames,
      registers,
    }).labels(projection);
    const batchDuration = new Histogram({
      name: 'os_audit_batch_duration_seconds',
      help: 'Time from the start of a batch to its commit, for batches that moved the checkpoint.',
      labelNames,
      buckets: BATCH_DURATION_BUCKETS,
      registers,
    });
    batchDuration.zero(projection);
    this.batchDuration = batchDuration.labels(projection);
    this.poisonEvents = new Counter({
      name: 'os_audit_poison_events_total',
      help: 'Events the projection cannot read that this daemon set aside in projection_errors (--skip-invalid) since it started.',
      labelNames,
      registers,
    }).labels(projection);
    this.lagEvents = new Gauge({
      name: 'os_audit_lag_events',
      help: 'Events committed to the log but not projected yet (refreshed every second).',
      labelNames,
      registers,
    }).labels(projection);
    this.lagSeconds = new Gauge({
      name: 'os_audit_lag_seconds',
      help: 'Age of the oldest event not projected yet; 0 when none is waiting (refreshed every second).',
      labelNames,
      registers,
    }).labels(projection);
    this.projectionErrors = new Gauge({
      name: 'os_audit_projection_errors',
      help: 'Rows in projection_errors: unreadable events set aside by any daemon or rebuild, ever (refreshed every second).',
      labelNames,
      registers,
    }).labels(projection);
    this.leader = new Gauge({
      name: 'os_audit_leader',
      help: '1 while this daemon holds the lease (it is the one writing), else 0.',
      labelNames,
      registers,
    }).labels(projection);
    this.stoppedSessions = new Counter({
      name: 'os_audit_sessions_stopped_total',
      help: "Sessions this daemon stopped since it started: at an event the projection cannot read, at a hole in their log, or where the projection's SQL failed on their events.",
      labelNames,
      registers,
    }).labels(projection);
    this.blockedSessions = new Gauge({
      name: 'os_audit_blocked_sessions',
      help: 'Sessions the projection is stopped at (projection_blocked_sessions), by any daemon or rebuild (refreshed every second).',
      labelNames,
      registers,
    }).labels(projection);
    this.databaseUp = new Gauge({
      name: 'os_audit_database_up',
      help: "1 while this daemon reaches the database, 0 while its connection is lost and it retries (from its batches and status reads).",
      labelNames,
      registers,
    }).labels(projection);
    this.connectionLosses = new Counter({
      name: 'os_audit_connection_losses_total',
      help: 'Times this daemon lost the database since it started (a killed connection, a server restart), each ridden through by retrying.',
      labelNames,
      registers,
    }).labels(projection);
    this.notificationsHeard = new Gauge({
      name: 'os_audit_notifications_heard',
      help: "1 when the daemon's LISTEN hears NOTIFY (a probe at its start), 0 until then or when it does not: it then finds new events by polling.",
      labelNames,
      registers,
    }).labels(projection);
    new Gauge({
      name: 'os_audit_projector_info',
      help: 'Always 1; names this daemon (its lease owner) and its projection.',
      labelNames: ['owner', 'projection'],
      registers,
    }).set(labels, 1);
    // Every sample from the start, so that rate() and alerts see the zeros.
    for (const counter of [this.eventsProjected, this.batches, this.poisonEvents, this.stoppedSessions, this.connectionLosses]) counter.inc(0);
    this.leader.set(0);
    this.databaseUp.set(1);
    this.notificationsHeard.set(0);
  }

  /** Counts what a projector reports (pass it as, or call it from, `onEvent`). */
  record(event: ProjectorEvent): void {
    switch (event.type) {
      case 'batch':
        this.eventsProjected.inc(event.result.eventsApplied);
        this.poisonEvents.inc(event.result.skipped);
        this.batches.inc();
        this.batchDuration.observe(event.durationMs / 1000);
        return;
      case 'leader':
        this.leader.set(1);
        return;
      case 'standby':
        this.leader.set(0);
        return;
      case 'sessions_stopped':
        this.stoppedSessions.inc(event.count);
        return;
      case 'database':
        this.databaseUp.set(event.reachable ? 1 : 0);
        if (!event.reachable) this.connectionLosses.inc();
        return;
      case 'notifications':
        this.notificationsHeard.set(event.heard ? 1 : 0);
        return;
    }
  }

  /** Sets the lag gauges from a status read. */
  recordStatus(status: ProjectionStatus): void {
    this.lagEvents.set(status.behind.events);
    this.lagSeconds.set(status.behind.seconds);
    this.projectionErrors.set(status.skippedEvents);
    this.blockedSessions.set(status.blockedSessions);
  }

  /** Every metric in the Prometheus text format (serve it with {@link contentType}). */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}
