import { describe, expect, it } from 'vitest';
import { Prng } from '../../bench/prng.js';
import { readProjectionStatus } from '../../src/projector/projection-status.js';
import { EventStore } from '../../src/store/event-store.js';
import { backendsOf, foldedTotals, lastSeqsOffTheCheckpoint, pollUntil, readCheckpointRow } from '../support/daemon-process.js';
import { appendTaggedBacklog } from '../support/tagged-backlog.js';
import { useTestDatabase } from '../support/test-database.js';
import { scaled, useFaultRun } from '../support/use-fault-run.js';

/**
 * `kill -9` of the daemon at random points of a long catch-up, many times: each kill keeps
 * whole batches only (checkpoint and snapshot tables agree), the next daemon carries on from
 * there, and at the end every event is folded exactly once.
 */
const testDb = useTestDatabase();
const run = useFaultRun();

const SESSIONS = scaled(60, 500);
const KILLS = scaled(5, 15);
const EVENTS = SESSIONS * 1000;
// Small batches, so that a kill lands inside one; a short lease, so that the next daemon starts at once.
const DAEMON_ARGS = ['--batch-size', '4000', '--lease-ttl', '500'];

describe('kill -9 of the daemon during a long catch-up', () => {
  it(`${KILLS} times at random points of a ${EVENTS}-event catch-up`, { timeout: scaled(180_000, 900_000) }, async () => {
    const seed = Date.now();
    const random = new Prng(seed);
    const units = await appendTaggedBacklog(new EventStore(testDb.db), 'catch-up', SESSIONS, 1000);
    const killedAt: number[] = [];
    for (let kill = 0; kill < KILLS; kill += 1) {
      const before = (await readCheckpointRow(testDb.db)).events_applied;
      // Somewhere in the next fifth of what is left (so that every kill finds work to cut).
      const target = before + Math.max(1, Math.floor(random.next() * 0.2 * (EVENTS - before)));
      const daemon = run.startDaemon(testDb.url, { owner: `fault-daemon-${kill}`, args: DAEMON_ARGS });
      const applied = await pollUntil(
        `fault-daemon-${kill} to pass ${target} events (seed ${seed})`,
        async () => {
          if (!daemon.isRunning()) throw new Error(`the daemon exited before its kill: ${daemon.stderr()}`);
          const now = (await readCheckpointRow(testDb.db)).events_applied;
          return now >= target && now;
        },
        { timeoutMs: 60_000, intervalMs: 5 },
      );
      daemon.child.kill('SIGKILL');
      expect(await daemon.exited).toEqual({ code: null, signal: 'SIGKILL' });
      expect(applied, `the daemon finished before kill ${kill}: make the backlog bigger`).toBeLessThan(EVENTS);
      killedAt.push(applied);
      // The server finishes a statement under way without the daemon: wait until it is gone.
      await pollUntil('the dead daemon\'s connections to close', async () => (await backendsOf(testDb.db, daemon.applicationName)).length === 0);
      // Whole batches only: what the checkpoint went past, and nothing more, is in the tables.
      expect(await lastSeqsOffTheCheckpoint(testDb.db)).toEqual([]);
      const totals = await foldedTotals(testDb.db);
      expect(totals.snapshots).toEqual(totals.log);
      expect(totals.snapshots.events).toBe((await readCheckpointRow(testDb.db)).events_applied);
    }
    expect(killedAt).toEqual([...killedAt].sort((a, b) => a - b));
    const last = run.startDaemon(testDb.url, { owner: 'fault-daemon-last', args: DAEMON_ARGS });
    // The last killed daemon's batch may have committed the whole backlog without it: the
    // catch-up below can then hold before this one has started, and a SIGTERM sent before its
    // handler is installed kills it (seen on a slow machine).
    await last.waitForLog('started', 60_000);
    await pollUntil('the last daemon to catch up', async () => (await readProjectionStatus(testDb.db, 'os_snapshot')).behind.events === 0, {
      timeoutMs: 120_000,
      intervalMs: 50,
    });
    expect((await last.stop('SIGTERM')).code).toBe(0);
    expect((await readCheckpointRow(testDb.db)).events_applied).toBe(EVENTS);
    await run.expectStoreRight(testDb.db, testDb.url, units);
  });
});
