import { describe, expect, it } from 'vitest';
import { readProjectionStatus } from '../../src/projector/projection-status.js';
import { EventStore } from '../../src/store/event-store.js';
import { type AppendUnit, taggedEvent } from '../support/append-journal.js';
import { countEvents, pollUntil, readCheckpointRow, sleep } from '../support/daemon-process.js';
import { useTestDatabase } from '../support/test-database.js';
import { scaled, useFaultRun } from '../support/use-fault-run.js';

/**
 * A transaction that appends and stays open for long while writers go on and a daemon runs
 * (test/projector/out-of-order.int.spec.ts checks the same order in-process, step by step):
 * the daemon must not move past it, and folds its events once it commits late.
 */
const testDb = useTestDatabase();
const run = useFaultRun();

const HOLD_MS = scaled(5_000, 60_000);
const SESSIONS = Array.from({ length: 8 }, (_, i) => `horizon-${i}`);

describe('a long transaction holding the horizon', () => {
  it(`holds the daemon for ${HOLD_MS / 1000} s under load, then commits late and is folded`, { timeout: scaled(90_000, 300_000) }, async () => {
    const writer = run.startWriter({ name: 'fault-writer', url: testDb.url, api: 'event-store', sessions: SESSIONS, appendsPerSecond: 50, batch: [1, 10] });
    await writer.ready;
    const daemon = run.startDaemon(testDb.url, { owner: 'fault-daemon' });
    await daemon.waitForLog('leader');

    const held: AppendUnit = { id: 'held', sessionId: 'horizon-held', texts: Array.from({ length: 50 }, (_, i) => JSON.stringify(taggedEvent('held', i))) };
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let appended!: () => void;
    const hasAppended = new Promise<void>((resolve) => (appended = resolve));
    const transaction = new EventStore(testDb.db).transaction(async (store) => {
      held.seqs = await store.append(held.sessionId, held.texts.map((_, i) => taggedEvent('held', i)));
      appended();
      await released;
    });
    try {
      await hasAppended;
      // The daemon folds what was committed before the transaction began, then stops at it.
      let previous = -1;
      const applied = await pollUntil('the daemon to stop at the open transaction', async () => {
        const now = (await readCheckpointRow(testDb.db)).events_applied;
        const steady = now === previous ? now : undefined;
        previous = now;
        await sleep(500);
        return steady;
      });
      const stored = await countEvents(testDb.db);
      await sleep(HOLD_MS);
      // Writers went on, the daemon did not pass the open transaction: status names it.
      const status = await readProjectionStatus(testDb.db, 'os_snapshot');
      expect(status.horizonHeldBy).not.toBeNull();
      expect(await countEvents(testDb.db)).toBeGreaterThan(stored + 500);
      // At most the one append the writer had in flight when the transaction began.
      expect((await readCheckpointRow(testDb.db)).events_applied - applied).toBeLessThanOrEqual(10);
      const snapshot = await testDb.db.selectFrom('os_snapshots').where('session_id', '=', held.sessionId).select('last_seq').executeTakeFirst();
      expect(snapshot).toBeUndefined();
    } finally {
      release();
      await transaction;
    }
    held.ackedAt = Date.now();
    await pollUntil('the held events to be folded', async () => {
      const row = await testDb.db.selectFrom('os_snapshots').where('session_id', '=', held.sessionId).select('last_seq').executeTakeFirst();
      return row?.last_seq === 49;
    }, { timeoutMs: 30_000 });
    await writer.stop();
    await pollUntil('the daemon to catch up', async () => (await readProjectionStatus(testDb.db, 'os_snapshot')).behind.events === 0, { timeoutMs: 60_000 });
    expect((await daemon.stop('SIGTERM')).code).toBe(0);
    await run.expectStoreRight(testDb.db, testDb.url, [held]);
  });
});
