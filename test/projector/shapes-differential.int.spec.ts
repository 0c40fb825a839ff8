import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { foldOsSnapshotPrefix } from '../../projections/os-snapshot/fold-os-snapshot.js';
import { readSqlOsSnapshot, serializeOsSnapshot, verifyOsSnapshots } from '../../src/deprecated-os-snapshot.js';
import type { JsonObject } from '../../src/json/json-value.js';
import { parseJson } from '../../src/json/parse-json.js';
import { encodeEventText } from '../../src/events/encode-event.js';
import { EventStore } from '../../src/store/event-store.js';
import { arbitraryShapedLog } from '../support/arbitrary-shapes.js';
import { osSnapshotProjector } from '../support/projector-harness.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();
let run = 0;
/** What the runs went through, so that a run that never met an unreadable event cannot pass unseen. */
const seen = { stopped: 0, folded: 0, stand_ins: 0 };

/**
 * The SQL reading of events (json_to_record, type checks, defaults) against the in-memory one
 * (`readEvent`), on events in any shape: each session's snapshot, where it stops and why, equal.
 */
describe('differential: events in any shape read the same in SQL and in memory', () => {
  it('gives every session the snapshot of the same prefix, stopped at the same event for the same reason', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(arbitraryShapedLog({ maxLength: 30 }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 40 }),
        fc.boolean(),
        async (logs, batchSize, skipInvalid) => {
          run += 1;
          const store = new EventStore(testDb.db);
          const byId = new Map(logs.map((texts, i) => [`shape-${run}-${i}`, texts]));
          for (const [sessionId, texts] of byId) {
            const encoded = texts.map((text) => encodeEventText(text, { sessionId }));
            seen.stand_ins += encoded.filter((event) => event.payloadText !== null).length;
            if (texts.length > 0) await store.appendEncoded(sessionId, encoded);
          }
          await osSnapshotProjector(testDb.db, { batchSize, skipInvalid }).catchUp();
          for (const [sessionId, texts] of byId) {
            if (texts.length === 0) continue;
            const reference = foldOsSnapshotPrefix(texts.map((text) => parseJson(text) as JsonObject), undefined, { skip: () => skipInvalid });
            const stored = await readSqlOsSnapshot(testDb.db, sessionId);
            expect(stored, sessionId).toBeDefined();
            expect(serializeOsSnapshot(stored!.snapshot), sessionId).toBe(serializeOsSnapshot(reference.snapshot));
            const stoppedAt = reference.stoppedAt;
            expect(stored!.stopped === null ? null : { index: stored!.stopped.seq, problem: stored!.stopped.problem }, sessionId).toEqual(stoppedAt);
            expect(stored!.lastSeq).toBe(stoppedAt === null ? texts.length - 1 : stoppedAt.index - 1);
            if (stoppedAt === null) seen.folded += 1;
            else seen.stopped += 1;
          }
          const verified = await verifyOsSnapshots(testDb.db, { sessions: [...byId.keys()].filter((id) => byId.get(id)!.length > 0) });
          expect(verified.mismatches).toEqual([]);
        },
      ),
      { numRuns: 60, ...(process.env.FC_SEED ? { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH, endOnFailure: true } : {}) },
    );
    expect(seen.stopped).toBeGreaterThan(10);
    expect(seen.folded).toBeGreaterThan(10);
    expect(seen.stand_ins).toBeGreaterThan(10);
  }, 240_000);
});
