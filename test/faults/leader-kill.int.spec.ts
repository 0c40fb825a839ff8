import { describe, expect, it } from 'vitest';
import { readProjectionStatus } from '../../src/projector/projection-status.js';
import { type DaemonProcess, pollUntil, readCheckpointRow, readLeaseRow } from '../support/daemon-process.js';
import { useTestDatabase } from '../support/test-database.js';
import { scaled, useFaultRun } from '../support/use-fault-run.js';

/**
 * Three daemons under a steady load, the leader SIGKILLed in turn: a standby takes over each
 * time (a new epoch), a new daemon joins so that three run again, and at the end every
 * acknowledged append is folded exactly once.
 */
const testDb = useTestDatabase();
const run = useFaultRun();

const KILLS = scaled(3, 6);
const SESSIONS = Array.from({ length: 12 }, (_, i) => `leader-${i}`);

describe('three daemons, the leader killed in turn', () => {
  it(`${KILLS} leaders killed under two writers`, { timeout: scaled(120_000, 300_000) }, async () => {
    const writers = [
      run.startWriter({ name: 'fault-writer-1', url: testDb.url, api: 'event-store', sessions: SESSIONS, appendsPerSecond: 40, batch: [1, 20] }),
      run.startWriter({ name: 'fault-writer-2', url: testDb.url, api: 'session-log', sessions: SESSIONS, appendsPerSecond: 40, batch: [1, 1] }),
    ];
    await Promise.all(writers.map((writer) => writer.ready));
    let started = 0;
    const startOne = () => run.startDaemon(testDb.url, { owner: `fault-daemon-${started++}`, args: ['--lease-ttl', '1000'] });
    const daemons: DaemonProcess[] = [startOne(), startOne(), startOne()];
    let epoch = 0;
    for (let kill = 0; kill <= KILLS; kill += 1) {
      const lease = await pollUntil(`a new leader after ${kill} kills`, async () => {
        const row = await readLeaseRow(testDb.db);
        return row !== undefined && row.epoch > epoch && !row.expired && row;
      });
      epoch = lease.epoch;
      const leader = daemons.find((daemon) => daemon.owner === lease.owner)!;
      // It leads: the checkpoint moves while it does.
      const from = (await readCheckpointRow(testDb.db)).events_applied;
      await pollUntil(`${leader.owner} to fold something`, async () => (await readCheckpointRow(testDb.db)).events_applied > from);
      if (kill === KILLS) break;
      leader.child.kill('SIGKILL');
      expect(await leader.exited).toEqual({ code: null, signal: 'SIGKILL' });
      daemons.splice(daemons.indexOf(leader), 1, startOne());
    }
    for (const writer of writers) await writer.stop();
    await pollUntil('the leader to catch up', async () => (await readProjectionStatus(testDb.db, 'os_snapshot')).behind.events === 0, { timeoutMs: 60_000 });
    for (const daemon of daemons) {
      await daemon.waitForLog('started'); // a SIGTERM before its handlers are in place would just end it
      expect((await daemon.stop('SIGTERM')).code).toBe(0);
    }
    const audit = await run.expectStoreRight(testDb.db, testDb.url);
    expect(audit.acknowledgedUnits).toBeGreaterThan(100);
  });
});
