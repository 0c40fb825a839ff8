import fc from 'fast-check';
import { type Kysely, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { osSnapshotV0260Projection } from '../../projections/os-snapshot-v0-2-60/index.js';
import type { DB } from '../../src/db/schema.js';
import type { JsonObject, JsonValue } from '../../src/json/json-value.js';
import { parseJson } from '../../src/json/parse-json.js';
import { stringifyJson } from '../../src/json/stringify-json.js';
import { readEvent } from '../../src/projector/event-reads.js';
import { Projector, type ProjectorOptions } from '../../src/projector/projector.js';
import { rebuildProjection } from '../../src/projector/rebuild-projection.js';
import { EventStore } from '../../src/store/event-store.js';
import type { WireEvent } from '../support/arbitrary-events.js';
import { arbitraryV0260Log } from '../support/arbitrary-v0-2-60-events.js';
import { ProjectionSpec } from '../../src/testing/projection-spec.js';
import { useTestDatabase } from '../support/test-database.js';
import { foldedV0260Session, sqlV0260Session } from '../support/v0-2-60-stored-session.js';
import { asRustReadsIt, V0260_GOLDEN_CASES, v0260Fixture } from '../support/v0-2-60-fixtures.js';

const testDb = useTestDatabase();

function projector(options: ProjectorOptions = {}): Projector {
  return new Projector(testDb.db, osSnapshotV0260Projection, { pollIntervalMs: 50, leaseTtlMs: 2000, ...options });
}

let run = 0;
/** What the runs went through, so that a kind of case never met cannot pass unseen. */
const seen = { sessions: 0, stopped: 0, skipping: 0, skippedUnreadable: 0, tokensAboveSafe: 0, nullReservations: 0, signals: 0, cancellations: 0 };

describe('the v0.2.60 snapshot in SQL', () => {
  it.each(V0260_GOLDEN_CASES)('golden fixture %s: the view and the in-memory fold hold the fixture, key for key', async (_, eventsFile, snapshotFile) => {
    await ProjectionSpec.for(osSnapshotV0260Projection, { db: testDb.db })
      .given({ s: v0260Fixture(eventsFile) as JsonObject[] })
      .then({ s: asRustReadsIt(v0260Fixture(snapshotFile)) });
  });

  it('equals the in-memory fold on random logs: every kind, unreadable events, batch sizes and interleavings', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(arbitraryV0260Log({ unreadable: true, maxLength: 30 }), { minLength: 1, maxLength: 4 }),
        fc.array(fc.tuple(fc.nat(3), fc.integer({ min: 1, max: 8 })), { maxLength: 12 }),
        fc.integer({ min: 1, max: 60 }),
        fc.boolean(),
        async (logs, schedule, batchSize, skipInvalid) => {
          run += 1;
          const ids = logs.map((_, i) => `random-${run}-${i}`);
          const store = new EventStore(testDb.db);
          const cursors = logs.map(() => 0);
          const appendNext = async (i: number, count: number) => {
            const events = logs[i]!.slice(cursors[i], cursors[i]! + count);
            cursors[i]! += events.length;
            if (events.length > 0) await store.append(ids[i]!, events);
          };
          // Interleaved appends of a few events each, folded midway too: sessions continue across batches.
          for (const [step, [session, count]] of schedule.entries()) {
            await appendNext(session % logs.length, count);
            if (step === schedule.length >> 1) await projector({ batchSize, skipInvalid }).catchUp();
          }
          for (const [i, log] of logs.entries()) await appendNext(i, log.length);
          await projector({ batchSize, skipInvalid }).catchUp();

          for (const [i, sessionId] of ids.entries()) {
            if (logs[i]!.length === 0) continue;
            const folded = await foldedV0260Session(testDb.db, sessionId, { skipInvalid });
            expect(await sqlV0260Session(testDb.db, sessionId), sessionId).toEqual(folded);
            count(logs[i]!, folded.stoppedAt?.index, skipInvalid);
          }
        },
      ),
      { numRuns: 25, ...(process.env.FC_SEED ? { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH, endOnFailure: true } : {}) },
    );
    expect(seen.sessions).toBeGreaterThan(40);
    expect(seen.stopped).toBeGreaterThan(2);
    expect(seen.skipping).toBeGreaterThan(10);
    expect(seen.skippedUnreadable).toBeGreaterThan(2);
    expect(seen.sessions - seen.stopped - seen.skipping).toBeGreaterThan(3);
    for (const folded of [seen.tokensAboveSafe, seen.nullReservations, seen.signals, seen.cancellations]) expect(folded).toBeGreaterThan(3);
  }, 120_000);

  it('rebuilt, every session stored so far is its in-memory fold again', async () => {
    await rebuildProjection(testDb.db, osSnapshotV0260Projection);
    const sessions = await testDb.db.selectFrom('sessions').select('session_id').execute();
    expect(sessions.length).toBeGreaterThan(40);
    for (const { session_id: sessionId } of sessions) {
      expect(await sqlV0260Session(testDb.db, sessionId), sessionId).toEqual(await foldedV0260Session(testDb.db, sessionId));
    }
  });

  it('folds a u64 tokens above 2^63 exactly and sums it in os_v0_2_60_operations', async () => {
    const usage = (tokens: bigint) => ({ kind: 'budget_usage_reported', turn: 1, operation_id: 'op-big', reservation_id: 'r', tokens, subagents: 1, rounds: 2 });
    await new EventStore(testDb.db).append('big tokens', [usage(2n ** 64n - 1n), usage(2n ** 63n), { kind: 'budget_exceeded', turn: 2, operation_id: 'op-big', budget: 'tokens' }]);
    await projector().catchUp();
    expect((await sqlV0260Session(testDb.db, 'big tokens')).snapshot).toContain('"tokens":18446744073709551615,');
    const { rows } = await sql<{ tokens: string; usage_reports: number; budgets_exceeded: number }>`
      SELECT tokens::text, usage_reports, budgets_exceeded FROM os_v0_2_60_operations WHERE session_id = 'big tokens'`.execute(testDb.db);
    expect(rows).toEqual([{ tokens: String(2n ** 64n - 1n + 2n ** 63n), usage_reports: 2, budgets_exceeded: 1 }]);
  });

  it("has down migrations that undo its up migrations, in reverse key order", async () => {
    const keys = Object.keys(osSnapshotV0260Projection.migrations).sort();
    const relations = async (db: Kysely<DB>) =>
      (await sql<{ name: string }>`SELECT relname AS name FROM pg_class WHERE relname LIKE 'os%v0_2_60%' AND relkind IN ('r', 'v') ORDER BY 1`.execute(db)).rows;
    const before = await relations(testDb.db);
    await testDb.db.transaction().execute(async (trx) => {
      for (const key of keys.toReversed()) await osSnapshotV0260Projection.migrations[key]!.down!(trx);
      expect(await relations(trx)).toEqual([]);
      for (const key of keys) await osSnapshotV0260Projection.migrations[key]!.up(trx);
    });
    expect(before.map((row) => row.name).sort()).toEqual([...osSnapshotV0260Projection.tables, ...osSnapshotV0260Projection.views].sort());
    expect(await relations(testDb.db)).toEqual(before);
  });
});

/** Counts what a log's folded prefix holds of the cases the property must meet. */
function count(log: WireEvent[], stoppedAt: number | undefined, skipInvalid: boolean): void {
  seen.sessions += 1;
  if (stoppedAt !== undefined) seen.stopped += 1;
  if (skipInvalid) seen.skipping += 1;
  if (skipInvalid && log.some((event) => readEvent(osSnapshotV0260Projection.reads, parseJson(stringifyJson(event)) as JsonObject)?.problem)) seen.skippedUnreadable += 1;
  for (const event of log.slice(0, stoppedAt)) {
    if (event.kind === 'budget_usage_reported' && typeof event['tokens'] === 'bigint' && event['tokens'] > BigInt(Number.MAX_SAFE_INTEGER)) seen.tokensAboveSafe += 1;
    if (event.kind === 'budget_exceeded' && (event['reservation_id'] ?? null) === null) seen.nullReservations += 1;
    if (event.kind === 'signal_delivery_disposed') seen.signals += 1;
    if (event.kind === 'operation_cancelled') seen.cancellations += 1;
  }
}
