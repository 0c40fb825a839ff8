import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { ProjectionStatus } from '../projector/projection-status.js';
import type { ProjectorEvent } from '../projector/projector.js';

/** Batch durations from 1 ms to 10 s: a batch of the default size commits in well under a second. */
const BATCH_DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Who the metrics describe: every `os_audit_*` sample carries `projection`; the info metric also `owner`. */
export interface ProjectorMetricsLabels {
  /** The daemon's projections, each its own series. */
  projections: readonly string[];
  owner: string;
}

/** The daemon's metric families, each labelled by projection. */
function metricFamilies(registers: Registry[]) {
  const labelNames = ['projection'] as const;
  return {
    eventsProjected: new Counter({
      name: 'os_audit_events_projected_total',
      help: 'Events this daemon folded into the projection (events set aside not included).',
      labelNames,
      registers,
    }),
    batches: new Counter({
      name: 'os_audit_batches_total',
      help: 'Batches this daemon committed that moved the checkpoint.',
      labelNames,
      registers,
    }),
    batchDuration: new Histogram({
      name: 'os_audit_batch_duration_seconds',
      help: 'Time from the start of a batch to its commit, for batches that moved the checkpoint.',
      labelNames,
      buckets: BATCH_DURATION_BUCKETS,
      registers,
    }),
    batchFailures: new Counter({
      name: 'os_audit_batch_failures_total',
      help: 'Times a batch of this daemon (or its taking of the lease) failed with an error and was retried after a delay: a lost connection, a failing fold, another version of the projection.',
      labelNames,
      registers,
    }),
    poisonEvents: new Counter({
      name: 'os_audit_poison_events_total',
      help: 'Events the projection cannot read that this daemon set aside in projection_errors (--skip-invalid) since it started.',
      labelNames,
      registers,
    }),
    lagEvents: new Gauge({
      name: 'os_audit_lag_events',
      help: 'Events committed to the log but not projected yet (refreshed every second).',
      labelNames,
      registers,
    }),
    lagSeconds: new Gauge({
      name: 'os_audit_lag_seconds',
      help: 'Age of the oldest event not projected yet; 0 when none is waiting (refreshed every second).',
      labelNames,
      registers,
    }),
    projectionErrors: new Gauge({
      name: 'os_audit_projection_errors',
      help: 'Rows in projection_errors: unreadable events set aside by any daemon or rebuild, ever (refreshed every second).',
      labelNames,
      registers,
    }),
    leader: new Gauge({
      name: 'os_audit_leader',
      help: '1 while this daemon holds the lease (it is the one writing), else 0.',
      labelNames,
      registers,
    }),
    stoppedSessions: new Counter({
      name: 'os_audit_sessions_stopped_total',
      help: "Sessions this daemon stopped since it started: at an event the projection cannot read, at a hole in their log, or where the projection's SQL failed on their events.",
      labelNames,
      registers,
    }),
    blockedSessions: new Gauge({
      name: 'os_audit_blocked_sessions',
      help: 'Sessions the projection is stopped at (projection_blocked_sessions), by any daemon or rebuild (refreshed every second).',
      labelNames,
      registers,
    }),
    databaseUp: new Gauge({
      name: 'os_audit_database_up',
      help: "1 while this daemon reaches the database, 0 while its connection is lost and it retries (from its batches and status reads).",
      labelNames,
      registers,
    }),
    connectionLosses: new Counter({
      name: 'os_audit_connection_losses_total',
      help: 'Times this daemon lost the database since it started (a killed connection, a server restart), each ridden through by retrying.',
      labelNames,
      registers,
    }),
    notificationsHeard: new Gauge({
      name: 'os_audit_notifications_heard',
      help: "1 when the daemon's LISTEN hears NOTIFY (a probe at its start), 0 until then or when it does not: it then finds new events by polling.",
      labelNames,
      registers,
    }),
    info: new Gauge({
      name: 'os_audit_projector_info',
      help: 'Always 1; names this daemon (its lease owner) and each of its projections.',
      labelNames: ['owner', 'projection'],
      registers,
    }),
  };
}

/**
 * A projector daemon's Prometheus metrics, in a registry of their own (with the process's
 * default metrics), one series per projection: counts of what this daemon folded, from its
 * projectors' events, and each projection's lag, from {@link ProjectionStatus} reads.
 *
 * @example
 * ```ts
 * const metrics = new ProjectorMetrics({ projections: [projection.name], owner: projector.lease.owner });
 * const projector = new Projector(db, projection, { onEvent: (event) => metrics.record(projection.name, event) });
 * metrics.recordStatus(await readProjectionStatus(db, projection.name));
 * response.end(await metrics.render());
 * ```
 */
export class ProjectorMetrics {
  readonly registry = new Registry();
  readonly contentType = this.registry.contentType;
  private readonly families;

  constructor(labels: ProjectorMetricsLabels) {
    collectDefaultMetrics({ register: this.registry });
    this.families = metricFamilies([this.registry]);
    const f = this.families;
    for (const name of labels.projections) {
      const projection = { projection: name };
      f.info.set({ owner: labels.owner, projection: name }, 1);
      f.batchDuration.zero(projection);
      // Every sample from the start, so that rate() and alerts see the zeros.
      for (const counter of [f.eventsProjected, f.batches, f.batchFailures, f.poisonEvents, f.stoppedSessions, f.connectionLosses]) counter.inc(projection, 0);
      f.leader.set(projection, 0);
      f.databaseUp.set(projection, 1);
      f.notificationsHeard.set(projection, 0);
    }
  }

  /** Counts what the projector of `projection` reports (call it from its `onEvent`). */
  record(projection: string, event: ProjectorEvent): void {
    const f = this.families;
    const labels = { projection };
    switch (event.type) {
      case 'batch':
        f.eventsProjected.inc(labels, event.result.eventsApplied);
        f.poisonEvents.inc(labels, event.result.skipped);
        f.batches.inc(labels);
        f.batchDuration.observe(labels, event.durationMs / 1000);
        return;
      case 'leader':
        f.leader.set(labels, 1);
        return;
      case 'standby':
        f.leader.set(labels, 0);
        return;
      case 'retry':
        // A delay of 0 is the append listener reconnecting, not a batch: polling carries on meanwhile.
        if (event.delayMs > 0) f.batchFailures.inc(labels);
        return;
      case 'sessions_stopped':
        f.stoppedSessions.inc(labels, event.count);
        return;
      case 'database':
        f.databaseUp.set(labels, event.reachable ? 1 : 0);
        if (!event.reachable) f.connectionLosses.inc(labels);
        return;
      case 'notifications':
        f.notificationsHeard.set(labels, event.heard ? 1 : 0);
        return;
    }
  }

  /** Sets a projection's lag gauges from a status read. */
  recordStatus(status: ProjectionStatus): void {
    const f = this.families;
    const labels = { projection: status.projection };
    f.lagEvents.set(labels, status.behind.events);
    f.lagSeconds.set(labels, status.behind.seconds);
    f.projectionErrors.set(labels, status.skippedEvents);
    f.blockedSessions.set(labels, status.blockedSessions);
  }

  /** Every metric in the Prometheus text format (serve it with {@link contentType}). */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}
