import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../src/json/json-value.js';
import { EventStore } from '../../src/store/event-store.js';
import { countEvents, type DaemonProcess, pollUntil } from '../support/daemon-process.js';
import { useDaemonProcesses } from '../support/use-daemon-processes.js';
import { sampleEvent } from '../support/log-files.js';
import { useTestDatabase } from '../support/test-database.js';
import { writeByHand } from '../support/write-by-hand.js';
import { parseSamples, sampleValue } from './prometheus-samples.js';

/**
 * `os-audit project --metrics-port 0` as real processes, seen over real HTTP the way Prometheus
 * and an orchestrator see them: health, readiness, and metrics through a burst of appends, a
 * standby next to the leader, and a session stopped at an event the snapshot cannot read.
 */
const testDb = useTestDatabase();
const startDaemon = useDaemonProcesses();

const BURST = { sessions: 100, eventsEach: 2_000 };
const BURST_EVENTS = BURST.sessions * BURST.eventsEach;
const projection = { projection: 'os_snapshot' };

const EVERY_METRIC = [
  'os_audit_events_projected_total',
  'os_audit_batches_total',
  'os_audit_batch_failures_total',
  'os_audit_batch_duration_seconds_bucket',
  'os_audit_batch_duration_seconds_sum',
  'os_audit_batch_duration_seconds_count',
  'os_audit_poison_events_total',
  'os_audit_lag_events',
  'os_audit_lag_seconds',
  'os_audit_projection_errors',
  'os_audit_leader',
  'os_audit_sessions_stopped_total',
  'os_audit_blocked_sessions',
  'os_audit_notifications_heard',
  'os_audit_projector_info',
];

async function get(url: string): Promise<{ status: number; contentType: string | null; text: string }> {
  const response = await fetch(url);
  return { status: response.status, contentType: response.headers.get('content-type'), text: await response.text() };
}

const metricsOf = async (daemon: DaemonProcess) => (await get(`${await daemon.metricsUrl()}/metrics`)).text;
const metric = async (daemon: DaemonProcess, name: string) => sampleValue(await metricsOf(daemon), name, projection);

async function readyz(daemon: DaemonProcess): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await get(`${await daemon.metricsUrl()}/readyz`);
  return { status: response.status, body: JSON.parse(response.text) as Record<string, unknown> };
}

/** Appends the burst: BURST.sessions sessions of BURST.eventsEach events, one append each, four at a time. */
async function appendBurst(prefix: string): Promise<void> {
  const store = new EventStore(testDb.db);
  const events = Array.from({ length: BURST.eventsEach }, (_, i) => sampleEvent(i) as JsonValue);
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < BURST.sessions) await store.append(`${prefix}-${String(next++).padStart(3, '0')}`, events);
    }),
  );
}

/**
 * Opens a transaction with a transaction id: the projector folds nothing committed after it
 * until it ends (its horizon), so the backlog stays whole meanwhile.
 */
async function holdHorizon(): Promise<{ release: () => Promise<void> }> {
  const holder = new pg.Client({ connectionString: testDb.url, application_name: 'metrics-horizon-holder' });
  await holder.connect();
  await holder.query('BEGIN');
  await holder.query('SELECT pg_current_xact_id()');
  return {
    release: async () => {
      await holder.query('ROLLBACK');
      await holder.end();
    },
  };
}

describe('os-audit project --metrics-port', () => {
  it('serves health, readiness and metrics; lag rises with a burst and returns to 0; standby and stopped sessions show', async () => {
    // Settings come from the environment too (flags would win).
    const a = startDaemon(testDb.url, { owner: 'metrics-a', env: { OS_AUDIT_BATCH_SIZE: '2000', OS_AUDIT_LOG_FORMAT: 'json' } });
    const urlA = await a.metricsUrl();
    expect(urlA).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await a.waitForLog('started')).toMatchObject({ level: 'info', owner: 'metrics-a', metricsUrl: urlA, batchSize: 2000, leaseTtlMs: 2000 });

    const health = await get(`${urlA}/healthz`);
    expect(health).toMatchObject({ status: 200, contentType: 'application/json; charset=utf-8' });
    expect(JSON.parse(health.text)).toMatchObject({ status: 'ok', owner: 'metrics-a' });
    expect((await get(`${urlA}/nowhere`)).status).toBe(404);

    await a.waitForLog('leader');
    const ready = await pollUntil('metrics-a to be ready', async () => {
      const answer = await readyz(a);
      return answer.status === 200 && answer;
    });
    expect(ready.body).toMatchObject({ status: 'ready', owner: 'metrics-a', projections: expect.arrayContaining([{ projection: 'os_snapshot', ready: true, role: 'leader' }]) });
    expect(ready.body).not.toHaveProperty('reason');

    // The lag gauges appear with the first status read, which may come a moment after the lease.
    const first = await pollUntil('every metric', async () => {
      const scrape = await get(`${urlA}/metrics`);
      const scraped = new Set(parseSamples(scrape.text).map((sample) => sample.name));
      return EVERY_METRIC.every((name) => scraped.has(name)) && scrape;
    });
    expect(first.status).toBe(200);
    expect(first.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const names = new Set(parseSamples(first.text).map((sample) => sample.name));
    // The process's own metrics come along.
    expect(names).toContain('process_cpu_user_seconds_total');
    expect(names).toContain('nodejs_eventloop_lag_seconds');
    expect(sampleValue(first.text, 'os_audit_projector_info', { owner: 'metrics-a', projection: 'os_snapshot' })).toBe(1);
    expect(sampleValue(first.text, 'os_audit_leader', projection)).toBe(1);
    expect(sampleValue(first.text, 'os_audit_events_projected_total', projection)).toBe(0);
    // Straight to PostgreSQL, its LISTEN hears the probe's NOTIFY.
    await pollUntil('the notification probe', async () => (await metric(a, 'os_audit_notifications_heard')) === 1);

    // The burst, held behind an open transaction: the whole of it is lag, then the daemon works it off.
    const horizon = await holdHorizon();
    try {
      await appendBurst('burst');
      expect(await countEvents(testDb.db)).toBe(BURST_EVENTS);
      await pollUntil('os_audit_lag_events to count the whole burst', async () => (await metric(a, 'os_audit_lag_events')) === BURST_EVENTS, {
        timeoutMs: 30_000,
        intervalMs: 100,
        explain: () => metricsOf(a),
      });
      const held = await metricsOf(a);
      expect(sampleValue(held, 'os_audit_lag_seconds', projection)).toBeGreaterThan(0);
      expect(sampleValue(held, 'os_audit_events_projected_total', projection)).toBe(0);
      expect((await readyz(a)).status).toBe(200);
    } finally {
      await horizon.release();
    }
    const seen: number[] = [];
    const drained = await pollUntil(
      'the daemon to project the burst and the lag to return to 0',
      async () => {
        const text = await metricsOf(a);
        const lag = sampleValue(text, 'os_audit_lag_events', projection);
        if (seen.at(-1) !== lag) seen.push(lag);
        return lag === 0 && sampleValue(text, 'os_audit_events_projected_total', projection) === BURST_EVENTS && text;
      },
      { timeoutMs: 120_000, intervalMs: 100, explain: async () => `lag seen ${JSON.stringify(seen)}\n${await metricsOf(a)}` },
    );
    console.info(`os_audit_lag_events seen while the burst was projected: ${seen.join(' → ')}`);
    expect(sampleValue(drained, 'os_audit_lag_seconds', projection)).toBe(0);
    const batches = sampleValue(drained, 'os_audit_batches_total', projection);
    expect(batches).toBeGreaterThanOrEqual(BURST_EVENTS / 2000);
    expect(sampleValue(drained, 'os_audit_batch_duration_seconds_count', projection)).toBe(batches);
    expect(sampleValue(drained, 'os_audit_batch_duration_seconds_bucket', { ...projection, le: '+Inf' })).toBe(batches);
    expect(sampleValue(drained, 'os_audit_batch_duration_seconds_sum', projection)).toBeGreaterThan(0);
    expect(sampleValue(drained, 'os_audit_poison_events_total', projection)).toBe(0);
    expect(sampleValue(drained, 'os_audit_leader', projection)).toBe(1);
    // Batches are summed up in the log every five seconds, up to the checkpoint.
    const summaries = await pollUntil('a log summary of the burst', async () => {
      const projected = a.logs.filter((record) => record.event === 'projected' && record.projection === 'os_snapshot');
      return projected.reduce((sum, record) => sum + (record.events as number), 0) === BURST_EVENTS && projected;
    }, { timeoutMs: 15_000, intervalMs: 100 });
    expect(summaries[0]).toMatchObject({ level: 'info', owner: 'metrics-a', checkpoint: { transactionId: expect.any(String), position: expect.any(Number) } });

    // A second daemon stands by: ready, not the leader, nothing projected.
    const b = startDaemon(testDb.url, { owner: 'metrics-b' });
    await b.waitForLog('started');
    await pollUntil('metrics-b to be ready', async () => (await readyz(b)).status === 200);
    expect((await readyz(b)).body).toMatchObject({ status: 'ready', owner: 'metrics-b', projections: expect.arrayContaining([{ projection: 'os_snapshot', ready: true, role: 'standby' }]) });
    const standby = await metricsOf(b);
    expect(sampleValue(standby, 'os_audit_leader', projection)).toBe(0);
    expect(sampleValue(standby, 'os_audit_events_projected_total', projection)).toBe(0);
    expect(sampleValue(standby, 'os_audit_projector_info', { owner: 'metrics-b', ...projection })).toBe(1);
    expect(await metric(a, 'os_audit_leader')).toBe(1);

    // An event the snapshot cannot read stops its session only: the leader stays ready and counts it.
    const position = await writeByHand(testDb.db, 'unreadable', 0, '{"kind":"suspended","turn":"three","reason":"ask_user"}');
    // Each projection that reads `suspended` stops it: the seed's says so in its own log record.
    const stopped = await pollUntil('os_snapshot to log the stopped session', async () =>
      a.logs.find((record) => record.event === 'sessions_stopped' && record.projection === 'os_snapshot'),
    );
    expect(stopped).toMatchObject({
      level: 'error',
      count: 1,
      sessions: [{ session_id: 'unreadable', seq: 0, position, kind: 'suspended', reason: 'unreadable' }],
    });
    await pollUntil('os_audit_sessions_stopped_total to count it', async () => (await metric(a, 'os_audit_sessions_stopped_total')) === 1);
    await pollUntil('os_audit_blocked_sessions to count the stopped session', async () => (await metric(a, 'os_audit_blocked_sessions')) === 1, {
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    expect(await readyz(a)).toMatchObject({ status: 200, body: { projections: expect.arrayContaining([expect.objectContaining({ projection: 'os_snapshot', role: 'leader' })]) } });
    expect(await metric(b, 'os_audit_sessions_stopped_total')).toBe(0);
    expect((await get(`${urlA}/healthz`)).status).toBe(200);
    expect((await readyz(b)).status).toBe(200);

    for (const daemon of [b, a]) {
      expect(await daemon.stop('SIGTERM')).toEqual({ code: 0, signal: null });
      expect(daemon.logs.at(-1)).toMatchObject({ event: 'stopped' });
      // Nothing but JSON log records on stderr.
      expect(daemon.logs).toHaveLength(daemon.lines.length);
    }
    await expect(fetch(`${urlA}/healthz`)).rejects.toThrow();
  }, 240_000);

  it('refuses a port in use with a clear error, and serves nothing with --metrics-port off', async () => {
    const a = startDaemon(testDb.url, { owner: 'port-a' });
    const port = new URL(await a.metricsUrl()).port;
    const clash = startDaemon(testDb.url, { owner: 'port-b', args: ['--metrics-port', port] });
    expect(await clash.exited).toEqual({ code: 1, signal: null });
    expect(clash.stderr()).toMatch(new RegExp(`os-audit: cannot serve metrics on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE.*--metrics-port or OS_AUDIT_METRICS_PORT to another port, 0 for any free one`));

    const quiet = startDaemon(testDb.url, { owner: 'port-c', args: ['--metrics-port', 'off'] });
    expect(await quiet.waitForLog('started')).toMatchObject({ metricsUrl: null });
    expect(quiet.logs.filter((record) => record.event === 'listening')).toEqual([]);
    for (const daemon of [quiet, a]) expect(await daemon.stop('SIGINT')).toEqual({ code: 0, signal: null });
  });
});
