import { describe, expect, it } from 'vitest';
import { readSqlOsSnapshot } from '../../projections/os-snapshot/stored-os-snapshot.js';
import { verifyOsSnapshots } from '../../projections/os-snapshot/verify-os-snapshots.js';
import { ProjectionHaltedError } from '../../src/projector/projection-halted-error.js';
import { readProjectionStatus } from '../../src/projector/projection-status.js';
import { EventStore } from '../../src/store/event-store.js';
import { osSnapshotProjector } from '../support/projector-harness.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { writeByHand } from '../support/write-by-hand.js';

/**
 * Writes an event around the validator, as a hand-written INSERT would; `validated` forges the
 * mark os-audit's own writers set.
 */
async function withPoisonedLog<T>(work: (db: TestDatabase, position: number) => Promise<T>): Promise<T> {
  const testDb = await createTestDatabase();
  try {
    const store = new EventStore(testDb.db);
    await store.append('clean', [{ kind: 'page_in', turn: 1, entry_count: 1 }]);
    await store.append('poisoned', [{ kind: 'tool_gated', turn: 1, call_id: 'c1', tool: 'shell', reason: 'ask_user' }]);
    const position = await writeByHand(testDb.db, 'poisoned', 1, '{"kind":"suspended","turn":"three","reason":"ask_user"}');
    await store.append('poisoned', [{ kind: 'resumed', turn: 4, approved: [], denied: [] }]);
    await store.append('clean', [{ kind: 'page_out', turn: 2, message_count: 1 }]);
    return await work(testDb, position);
  } finally {
    await testDb.drop();
  }
}

describe('a poison event (a stored row the snapshot cannot read)', () => {
  it('stops the projection by default, naming position, session, seq and field; status shows it', () =>
    withPoisonedLog(async ({ db }, position) => {
      const attempt = osSnapshotProjector(db).catchUp();
      await expect(attempt).rejects.toBeInstanceOf(ProjectionHaltedError);
      await expect(attempt).rejects.toThrow(
        new RegExp(`stopped at position ${position}: session "poisoned", seq 1 \\(suspended\\): field "turn": expected a u32.*"three"`),
      );
      const status = await readProjectionStatus(db, 'os_snapshot');
      expect(status.lastError?.message).toContain(`position ${position}`);
      // Nothing at or after the poison event was folded (events before it may have been,
      // in earlier batches, when another transaction held the horizon for a moment).
      expect(status.behind.events).toBeGreaterThanOrEqual(3);
      const poisoned = await readSqlOsSnapshot(db, 'poisoned');
      expect(poisoned?.lastSeq ?? -1).toBeLessThan(1);
    }));

  it('keeps a daemon alive and reporting instead of crash-looping', () =>
    withPoisonedLog(async ({ db }) => {
      const halts: string[] = [];
      const stop = new AbortController();
      const running = osSnapshotProjector(db, {
        onEvent: (event) => {
          if (event.type === 'halted') halts.push(event.error.message);
        },
      }).run(stop.signal);
      await expect.poll(() => halts.length, { timeout: 10_000 }).toBeGreaterThan(0);
      await new Promise((resolve) => setTimeout(resolve, 300));
      // Halted, it retries now and then, not in a tight loop.
      expect(halts.length).toBe(1);
      const status = await readProjectionStatus(db, 'os_snapshot');
      expect(status.leader?.live).toBe(true);
      expect(status.lastError?.message).toMatch(/field "turn"/);
      stop.abort();
      await running;
    }));

  it('is set aside in projection_errors with --skip-invalid, and the rest goes on', () =>
    withPoisonedLog(async ({ db }, position) => {
      const report = await osSnapshotProjector(db, { skipInvalid: true }).catchUp();
      expect(report).toMatchObject({ eventsApplied: 4, skipped: 1 });
      const errors = await db.selectFrom('projection_errors').selectAll().execute();
      expect(errors).toEqual([
        expect.objectContaining({ projection: 'os_snapshot', position, session_id: 'poisoned', seq: 1, kind: 'suspended', problem: expect.stringMatching(/field "turn"/) }),
      ]);
      const poisoned = await readSqlOsSnapshot(db, 'poisoned');
      expect(poisoned).toMatchObject({ lastSeq: 2, snapshot: { last_suspend: null, last_resumed_turn: 4, tool_gated_count: 1 } });
      expect(await verifyOsSnapshots(db, { all: true })).toMatchObject({ checked: 2, mismatches: [], pending: [] });
      expect((await readProjectionStatus(db, 'os_snapshot')).skippedEvents).toBe(1);
    }));

  it('makes the CLI exit 1 by default and 0 with --skip-invalid', () =>
    withPoisonedLog(async ({ url, db }, position) => {
      const env = { DATABASE_URL: url };
      const stopped = await runCliInProcess(['project', '--once'], { env });
      expect(stopped.code).toBe(1);
      expect(stopped.stderr).toMatch(new RegExp(`position ${position}: session "poisoned", seq 1`));
      expect((await runCliInProcess(['status'], { env })).stdout).toMatch(/last error: projection os_snapshot stopped at position/);
      const skipped = await runCliInProcess(['project', '--once', '--skip-invalid'], { env });
      expect(skipped).toMatchObject({ code: 0 });
      expect(skipped.stdout).toMatch(/projected \d+ events .*1 events set aside in projection_errors/);
      expect((await readProjectionStatus(db, 'os_snapshot')).checkpoint.eventsApplied).toBe(4);
      expect(await runCliInProcess(['verify', '--all'], { env })).toMatchObject({ code: 0 });
    }));
});

describe('events written around the store', () => {
  it('are folded like any other when they are valid', async () => {
    const testDb = await createTestDatabase();
    try {
      await writeByHand(testDb.db, 'by-hand', 0, '{"kind":"budget_exceeded","turn":2,"budget":"tokens"}');
      await osSnapshotProjector(testDb.db).catchUp();
      expect((await readSqlOsSnapshot(testDb.db, 'by-hand'))?.snapshot.budget_exceeded).toEqual([{ turn: 2, budget: 'tokens' }]);
    } finally {
      await testDb.drop();
    }
  });

  it('are caught even when they forge the validated mark, if the database cannot fold them', async () => {
    const testDb = await createTestDatabase();
    try {
      await new EventStore(testDb.db).append('forged', [{ kind: 'page_in', turn: 1, entry_count: 1 }]);
      const position = await writeByHand(testDb.db, 'forged', 1, '{"kind":"signal_disposed","turn":"x","signal_id":"s","disposition":"queue","queue_depth":1}', true);
      await expect(osSnapshotProjector(testDb.db).catchUp()).rejects.toThrow(
        new RegExp(`stopped at position ${position}: session "forged", seq 1 \\(signal_disposed\\): field "turn"`),
      );
      expect(await osSnapshotProjector(testDb.db, { skipInvalid: true }).catchUp()).toMatchObject({ skipped: 1 });
      expect((await readProjectionStatus(testDb.db, 'os_snapshot')).checkpoint.eventsApplied).toBe(1);
      expect(await verifyOsSnapshots(testDb.db, { all: true })).toMatchObject({ mismatches: [], pending: [] });
    } finally {
      await testDb.drop();
    }
  });
});

describe('a hole in a session log (written around the store)', () => {
  it('stops the projection loudly, even with --skip-invalid', async () => {
    const testDb = await createTestDatabase();
    try {
      await new EventStore(testDb.db).append('holed', [{ kind: 'page_in', turn: 1, entry_count: 1 }]);
      await writeByHand(testDb.db, 'holed', 2, '{"kind":"page_in","turn":2,"entry_count":1}');
      for (const skipInvalid of [false, true]) {
        await expect(osSnapshotProjector(testDb.db, { skipInvalid }).catchUp()).rejects.toThrow(
          /session "holed" has a hole in its log: seq 1 is missing \(the next stored event is seq 2\)/,
        );
      }
    } finally {
      await testDb.drop();
    }
  });
});
