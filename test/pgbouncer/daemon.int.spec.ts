import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../src/json/json-value.js';
import { readProjectionStatus } from '../../src/projector/projection-status.js';
import { EventStore } from '../../src/store/event-store.js';
import { countEvents, pollUntil } from '../support/daemon-process.js';
import { useDaemonProcesses } from '../support/use-daemon-processes.js';
import { sampleEvent } from '../support/log-files.js';
import { pgbouncerTestsRun, usePgBouncer } from '../support/pgbouncer.js';
import { sampleValue } from '../observability/prometheus-samples.js';
import { useTestDatabase } from '../support/test-database.js';

/**
 * `os-audit project` with its batches through PgBouncer in transaction pooling mode: with
 * --direct-url its LISTEN goes straight to PostgreSQL and an append wakes it at once; without,
 * no NOTIFY arrives, and it says so (a warning and a metric) and polls.
 */
const testDb = useTestDatabase();
const bouncer = usePgBouncer(() => testDb.url);
const startDaemon = useDaemonProcesses();

const events = (count: number) => Array.from({ length: count }, (_, i) => sampleEvent(i) as JsonValue);

/**
 * Appends `count` events to a new session (directly) and returns how long the daemon took to
 * fold them. It first waits for a moment when no transaction is open on the server: one of
 * another test (the horizon is the server's) would hold the fold back, however soon woken.
 */
async function appendAndTimeTheFold(sessionId: string, count: number): Promise<number> {
  await pollUntil(
    'no transaction open on the server',
    async () => (await sql<{ clear: boolean }>`SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE backend_xid IS NOT NULL) AS clear`.execute(testDb.db)).rows[0]!.clear,
    { timeoutMs: 120_000, intervalMs: 20 },
  );
  await new EventStore(testDb.db).append(sessionId, events(count));
  const appended = performance.now();
  const total = await countEvents(testDb.db);
  await pollUntil(`${sessionId} to be folded`, async () => (await readProjectionStatus(testDb.db, 'os_snapshot')).checkpoint.eventsApplied >= total, {
    timeoutMs: 120_000,
    intervalMs: 10,
  });
  return performance.now() - appended;
}

async function metric(url: string, name: string): Promise<number> {
  return sampleValue(await (await fetch(`${url}/metrics`)).text(), name, { projection: 'os_snapshot' });
}

describe.runIf(pgbouncerTestsRun)('the daemon behind PgBouncer (transaction pooling)', () => {
  it('with --direct-url: LISTEN straight to PostgreSQL wakes it on each append, while its batches go through the pooler', async () => {
    // Polling every 30 s: only a notification explains a fold within seconds.
    const daemon = startDaemon(bouncer.through(testDb.url), { owner: 'bounced-direct', args: ['--poll-interval', '30000', '--direct-url', testDb.url] });
    await daemon.waitForLog('leader');
    const url = await daemon.metricsUrl();
    await pollUntil('the notification probe', async () => (await metric(url, 'os_audit_notifications_heard')) === 1);
    await appendAndTimeTheFold('direct-warm-up', 10);
    const latencies: number[] = [];
    for (const session of ['direct-1', 'direct-2', 'direct-3']) latencies.push(await appendAndTimeTheFold(session, 50));
    // The best of three: another test's transaction may still hold one of them back.
    expect(Math.min(...latencies)).toBeLessThan(3000);

    // Its pool is PgBouncer's client (the URL names it); its listener is PostgreSQL's, LISTENing.
    expect((await bouncer.clients()).filter((client) => client.application_name === 'bounced-direct').length).toBeGreaterThan(0);
    const { rows } = await sql<{ query: string }>`
      SELECT query FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'os-audit-listener'`.execute(testDb.db);
    expect(rows.map((row) => row.query)).toContain('LISTEN os_audit_events_appended');
    expect(daemon.logs.filter((record) => record.level !== 'info')).toEqual([]);
    expect((await daemon.stop('SIGTERM')).code).toBe(0);
  }, 600_000);

  it('without it: warns that no NOTIFY arrives and that it polls, says so in its metrics, and still folds every event', async () => {
    const daemon = startDaemon(bouncer.through(testDb.url), { owner: 'bounced-polling', args: ['--poll-interval', '300'] });
    const warning = await daemon.waitForLog('notifications');
    expect(warning).toMatchObject({ level: 'warn', heard: false, pollIntervalMs: 300 });
    expect(warning.msg).toMatch(/LISTEN hears no NOTIFY .* polling every 300 ms.*--direct-url or OS_AUDIT_DIRECT_DATABASE_URL/);
    expect(await metric(await daemon.metricsUrl(), 'os_audit_notifications_heard')).toBe(0);
    await appendAndTimeTheFold('polled', 50);
    expect((await daemon.stop('SIGTERM')).code).toBe(0);
  }, 300_000);
});
