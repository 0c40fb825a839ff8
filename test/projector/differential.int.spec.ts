import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { foldOsSnapshot } from '../../projections/os-snapshot/fold-os-snapshot.js';
import { serializeOsSnapshot, verifyOsSnapshots } from '../../src/deprecated-os-snapshot.js';
import { validateEvent } from '../../src/events/validate-event.js';
import { EventStore } from '../../src/store/event-store.js';
import { arbitrarySessionLog, type WireEvent } from '../support/arbitrary-events.js';
import { compareWithFold, osSnapshotProjector, waitForHorizon } from '../support/projector-harness.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();
let run = 0;

/** Appends each log in batches of random sizes, interleaving the sessions at random. */
async function appendInterleaved(store: EventStore, logs: Map<string, WireEvent[]>, batchSizes: number[], order: number[]) {
  const cursors = new Map([...logs.keys()].map((id) => [id, 0]));
  const ids = [...logs.keys()];
  let pick = 0;
  while ([...cursors.entries()].some(([id, at]) => at < logs.get(id)!.length)) {
    const open = ids.filter((id) => cursors.get(id)! < logs.get(id)!.length);
    const id = open[order[pick % order.length]! % open.length]!;
    const size = batchSizes[pick % batchSizes.length]!;
    pick += 1;
    const at = cursors.get(id)!;
    const batch = logs.get(id)!.slice(at, at + size);
    await store.append(id, batch);
    cursors.set(id, at + batch.length);
  }
}

describe('differential: SQL snapshots equal the reference fold', () => {
  it('for random logs of every kind, batch sizes and interleavings', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(arbitrarySessionLog({ maxLength: 60 }), { minLength: 1, maxLength: 5 }),
        fc.array(fc.integer({ min: 1, max: 25 }), { minLength: 1, maxLength: 10 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 10 }),
        fc.integer({ min: 1, max: 300 }),
        async (logs, batchSizes, order, projectorBatchSize) => {
          run += 1;
          const byId = new Map(logs.map((log, i) => [`diff-${run}-${i}`, log]));
          const store = new EventStore(testDb.db);
          await appendInterleaved(store, byId, batchSizes, order);
          await osSnapshotProjector(testDb.db, { batchSize: projectorBatchSize }).catchUp();

          for (const [sessionId, log] of byId) {
            const reference = foldOsSnapshot(log.map((event) => validateEvent(event)));
            const stored = await compareWithFold(testDb.db, [sessionId]);
            if (log.length === 0) {
              expect(stored[0]!.sql).toBeUndefined();
              continue;
            }
            expect(stored[0]!.sql?.lastSeq).toBe(log.length - 1);
            expect(serializeOsSnapshot(stored[0]!.sql!.snapshot)).toBe(serializeOsSnapshot(reference));
            expect(stored[0]!.fold.snapshot).toEqual(reference);
          }
          const verified = await verifyOsSnapshots(testDb.db, { sessions: [...byId.keys()].filter((id) => byId.get(id)!.length > 0) });
          expect(verified.mismatches).toEqual([]);
        },
      ),
      { numRuns: 40 },
    );
    const all = await verifyOsSnapshots(testDb.db, { all: true });
    expect(all).toMatchObject({ mismatches: [], pending: [] });
    expect(all.checked).toBeGreaterThan(0);
  });
  it('for large batches: thousands of events of many sessions in one statement', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(arbitrarySessionLog({ minLength: 30, maxLength: 60 }), { minLength: 40, maxLength: 50 }), async (logs) => {
        run += 1;
        const byId = new Map(logs.map((log, i) => [`large-${run}-${i}`, log]));
        await appendInterleaved(new EventStore(testDb.db), byId, [7, 13, 25], [0, 3, 1, 4, 2]);
        // Transactions of other test files older than these appends would split the batch.
        await waitForHorizon(testDb.db);
        const report = await osSnapshotProjector(testDb.db, { batchSize: 5000 }).catchUp();
        expect(report.batches).toBe(1);
        expect(report.eventsApplied).toBeGreaterThan(1000);
        const verified = await verifyOsSnapshots(testDb.db, { sessions: [...byId.keys()] });
        expect(verified).toMatchObject({ mismatches: [], pending: [] });
        expect(verified.checked).toBe(byId.size);
      }),
      { numRuns: 3 },
    );
  });
});
