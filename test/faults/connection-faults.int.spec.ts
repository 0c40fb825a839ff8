import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Prng } from '../../bench/prng.js';
import { readProjectionStatus } from '../../src/projector/projection-status.js';
import { EventStore } from '../../src/store/event-store.js';
import { startCli } from '../support/cli-process.js';
import { startConnectionKiller } from '../support/connection-killer.js';
import { type DaemonProcess, pollUntil, sleep } from '../support/daemon-process.js';
import { startRestartablePostgres, type RestartablePostgres } from '../support/restartable-postgres.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch-database.js';
import type { AppendUnit } from '../support/append-journal.js';
import { appendTaggedBacklog } from '../support/tagged-backlog.js';
import { useTestDatabase } from '../support/test-database.js';
import { scaled, useFaultRun } from '../support/use-fault-run.js';
import type { WriterProcess } from '../support/writer-process.js';

/**
 * Connections killed (`pg_terminate_backend`) during catch-up and live load, and the server
 * restarted (fast and immediate) under writers and a daemon: nothing acknowledged is lost and
 * the daemon and writers live through it.

 */
const testDb = useTestDatabase({ perTest: true });
const run = useFaultRun();

const SESSIONS = Array.from({ length: 12 }, (_, i) => `conn-${i}`);
const LOAD_MS = scaled(10_000, 120_000);

/** Two writers (one per API) on `url`, ready. */
async function startWriters(url: string): Promise<WriterProcess[]> {
  const writers = [
    run.startWriter({ name: 'fault-writer-1', url, api: 'event-store', sessions: SESSIONS, appendsPerSecond: 40, batch: [1, 20] }),
    run.startWriter({ name: 'fault-writer-2', url, api: 'session-log', sessions: SESSIONS, appendsPerSecond: 40, batch: [1, 1] }),
  ];
  await Promise.all(writers.map((writer) => writer.ready));
  return writers;
}

/** Writers and daemon lived through it; the daemon catches up; then both stop cleanly. */
async function expectSurvivedThenStop(db: ScratchDatabase['db'], writers: readonly WriterProcess[], daemon: DaemonProcess): Promise<void> {
  for (const writer of writers) expect(writer.isRunning(), writer.stderr()).toBe(true);
  expect(daemon.isRunning(), daemon.stderr()).toBe(true);
  for (const writer of writers) await writer.stop();
  await pollUntil('the daemon to catch up', async () => (await readProjectionStatus(db, 'os_snapshot')).behind.events === 0, { timeoutMs: 60_000 });
  expect((await daemon.stop('SIGTERM')).code).toBe(0);
}

describe('connections killed', () => {
  it('repeatedly during a catch-up', { timeout: scaled(120_000, 600_000) }, async () => {
    const backlog = await appendTaggedBacklog(new EventStore(testDb.db), 'conn-backlog', scaled(50, 300), 1000);
    // Batches small enough, and kills often enough, that the catch-up outlasts several kills.
    const daemon = run.startDaemon(testDb.url, { owner: 'fault-daemon', args: ['--batch-size', '1000'] });
    const killer = startConnectionKiller({ adminUrl: testDb.url, database: testDb.name, applicationNames: 'fault-%', intervalMs: [100, 400], random: new Prng(Date.now()) });
    // Done once caught up and some of the daemon's connections died (in a busy CI run, two runs had ended before the first kill).
    await pollUntil('the catch-up, with connections killed', async () => killer.killed > 0 && (await readProjectionStatus(testDb.db, 'os_snapshot')).behind.events === 0, {
      timeoutMs: 120_000,
    });
    await killer.stop();
    expect(daemon.isRunning(), daemon.stderr()).toBe(true);
    expect((await daemon.stop('SIGTERM')).code).toBe(0);
    await run.expectStoreRight(testDb.db, testDb.url, backlog);
  });

  it('repeatedly under live load', { timeout: scaled(120_000, 600_000) }, async () => {
    const writers = await startWriters(testDb.url);
    const daemon = run.startDaemon(testDb.url, { owner: 'fault-daemon' });
    const killer = startConnectionKiller({ adminUrl: testDb.url, database: testDb.name, applicationNames: 'fault-%', intervalMs: [200, 1500], random: new Prng(Date.now()) });
    await sleep(LOAD_MS);
    await killer.stop();
    expect(killer.killed).toBeGreaterThan(0);
    await expectSurvivedThenStop(testDb.db, writers, daemon);
    await run.expectStoreRight(testDb.db, testDb.url);
  });
});

describe('the server restarted under writers and a daemon', () => {
  let server: RestartablePostgres;
  let database: ScratchDatabase;
  beforeAll(async () => {
    server = await startRestartablePostgres();
  });
  beforeEach(async () => {
    database = await createScratchDatabase(server.adminUrl);
  });
  afterEach(async () => {
    await database?.drop();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it.each(['fast', 'immediate'] as const)('-m %s, twice', { timeout: scaled(120_000, 600_000) }, async (mode) => {
    const writers = await startWriters(database.url);
    const daemon = run.startDaemon(database.url, { owner: `fault-daemon-${mode}` });
    await daemon.waitForLog('leader');
    for (let restart = 0; restart < scaled(2, 10); restart += 1) {
      await sleep(LOAD_MS / 4);
      await server.restart(mode);
    }
    await sleep(LOAD_MS / 4);
    await expectSurvivedThenStop(database.db, writers, daemon);
    await run.expectStoreRight(database.db, database.url);
  });

  it('down for a while: /readyz 503, os_audit_database_up 0 and a log line, then the daemon carries on by itself', { timeout: 120_000 }, async () => {
    const store = new EventStore(database.db);
    const daemon = run.startDaemon(database.url, { owner: 'fault-daemon-down' });
    const metrics = await daemon.metricsUrl();
    await daemon.waitForLog('leader');
    const before = await appendTaggedBacklog(store, 'down-before', 1, 5);
    await server.down('fast');
    await pollUntil('/readyz to say 503', async () => (await fetch(`${metrics}/readyz`)).status === 503, { timeoutMs: 20_000 });
    expect(await metricValue(metrics, 'os_audit_database_up')).toBe(0);
    const lost = await daemon.waitForLog('database');
    expect(lost).toMatchObject({ level: 'error', reachable: false });
    await sleep(3000);
    expect(daemon.isRunning(), daemon.stderr()).toBe(true);
    await server.up();
    const after = await appendTaggedBacklog(store, 'down-after', 1, 5);
    await pollUntil('the event appended after the restart to be folded', async () => (await readProjectionStatus(database.db, 'os_snapshot')).behind.events === 0, { timeoutMs: 30_000 });
    await pollUntil('/readyz to say 200', async () => (await fetch(`${metrics}/readyz`)).status === 200, { timeoutMs: 20_000 });
    expect(await metricValue(metrics, 'os_audit_database_up')).toBe(1);
    expect(await metricValue(metrics, 'os_audit_connection_losses_total')).toBeGreaterThanOrEqual(1);
    expect(daemon.logs.some((record) => record.event === 'database' && record.reachable === true)).toBe(true);
    expect((await daemon.stop('SIGTERM')).code).toBe(0);
    await run.expectStoreRight(database.db, database.url, [...before, ...after]);
  });

  it('a daemon started while the server is down waits, and projects once it is up', { timeout: 120_000 }, async () => {
    await server.down('fast');
    let units: AppendUnit[] = [];
    try {
      const daemon = run.startDaemon(database.url, { owner: 'fault-daemon-early' });
      const metrics = await daemon.metricsUrl();
      await sleep(3000);
      expect(daemon.isRunning(), daemon.stderr()).toBe(true);
      expect((await fetch(`${metrics}/readyz`)).status).toBe(503);
      await server.up();
      units = await appendTaggedBacklog(new EventStore(database.db), 'early', 2, 5);
      await daemon.waitForLog('leader', 30_000);
      await pollUntil('the events to be folded', async () => (await readProjectionStatus(database.db, 'os_snapshot')).behind.events === 0, { timeoutMs: 30_000 });
      expect((await daemon.stop('SIGTERM')).code).toBe(0);
    } finally {
      await server.up().catch(() => {});
    }
    await run.expectStoreRight(database.db, database.url, units);
  });
});

describe('one-shot commands while the server restarts', () => {
  let server: RestartablePostgres;
  let database: ScratchDatabase;
  beforeAll(async () => {
    server = await startRestartablePostgres();
    database = await createScratchDatabase(server.adminUrl);
  });
  afterAll(async () => {
    await database?.drop();
    await server?.stop();
  });

  it('status and snapshot started while it is down wait for it, say so once, and succeed', { timeout: 120_000 }, async () => {
    const units = await appendTaggedBacklog(new EventStore(database.db), 'cli-down', 3, 20);
    await server.down('immediate');
    const status = startCli(['status'], { databaseUrl: database.url, applicationName: 'fault-cli-status' });
    const snapshot = startCli(['snapshot', units[0]!.sessionId], { databaseUrl: database.url, applicationName: 'fault-cli-snapshot' });
    // Up only once status has met the server down (its start-up may take seconds on a busy machine).
    let statusStderr = '';
    status.child.stderr!.on('data', (chunk: Buffer) => (statusStderr += chunk.toString()));
    await pollUntil('status to meet the server down', async () => statusStderr.includes('cannot reach PostgreSQL'), { timeoutMs: 60_000 });
    await server.up();
    const [statusResult, snapshotResult] = await Promise.all([status.result, snapshot.result]);
    expect(statusResult.code, statusResult.stderr).toBe(0);
    expect(statusResult.stderr).toMatch(/^os-audit: cannot reach PostgreSQL \(.*\); trying again for up to 60 s$/m);
    expect(statusResult.stderr.match(/cannot reach PostgreSQL/g)).toHaveLength(1);
    // Not projected yet: the snapshot command says so, rather than failing on the connection.
    expect(snapshotResult.stderr).toMatch(/no snapshot of session|not projected yet/);
    await run.expectStoreRight(database.db, database.url, units);
  });
});

/** A sample's value in the daemon's /metrics (the projection's series). */
async function metricValue(metricsUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${metricsUrl}/metrics`)).text();
  const line = text.split('\n').find((sample) => sample.startsWith(`${name}{`));
  if (line === undefined) throw new Error(`no ${name} in /metrics`);
  return Number(line.split(' ').at(-1));
}
