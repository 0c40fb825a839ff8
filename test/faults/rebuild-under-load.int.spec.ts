import { describe, expect, it } from 'vitest';
import { readProjectionStatus } from '../../src/projector/projection-status.js';
import { EventStore } from '../../src/store/event-store.js';
import { startCli } from '../support/cli-process.js';
import { pollUntil } from '../support/daemon-process.js';
import { appendTaggedBacklog } from '../support/tagged-backlog.js';
import { useTestDatabase } from '../support/test-database.js';
import { scaled, useFaultRun } from '../support/use-fault-run.js';

/**
 * `os-audit rebuild` while writers append and the daemon folds: the daemon is fenced out and
 * carries on from the rebuilt checkpoint, and every event ends up folded exactly once.
 */
const testDb = useTestDatabase();
const run = useFaultRun();

const REBUILDS = scaled(2, 5);
const SESSIONS = Array.from({ length: 10 }, (_, i) => `rebuild-${i}`);

describe('rebuild under load', () => {
  it(`${REBUILDS} rebuilds under two writers and a daemon`, { timeout: scaled(120_000, 600_000) }, async () => {
    const backlog = await appendTaggedBacklog(new EventStore(testDb.db), 'rebuild-backlog', 20, scaled(1_000, 5_000));
    const writers = [
      run.startWriter({ name: 'fault-writer-1', url: testDb.url, api: 'event-store', sessions: SESSIONS, appendsPerSecond: 40, batch: [1, 20] }),
      run.startWriter({ name: 'fault-writer-2', url: testDb.url, api: 'session-log', sessions: SESSIONS, appendsPerSecond: 40, batch: [1, 1] }),
    ];
    await Promise.all(writers.map((writer) => writer.ready));
    const daemon = run.startDaemon(testDb.url, { owner: 'fault-daemon' });
    await daemon.waitForLog('leader');
    for (let i = 0; i < REBUILDS; i += 1) {
      const rebuild = await startCli(['rebuild', '--batch-size', '2000'], { databaseUrl: testDb.url, applicationName: 'fault-rebuild' }).result;
      expect(rebuild.code, rebuild.stderr).toBe(0);
      expect(rebuild.stdout).toMatch(/^rebuilt os_snapshot \(version 1\) from \d+ events$/m);
    }
    for (const writer of writers) await writer.stop();
    await pollUntil('the daemon to catch up', async () => (await readProjectionStatus(testDb.db, 'os_snapshot')).behind.events === 0, { timeoutMs: 60_000 });
    expect(daemon.isRunning()).toBe(true);
    expect((await daemon.stop('SIGTERM')).code).toBe(0);
    await run.expectStoreRight(testDb.db, testDb.url, backlog);
  });
});
