import fc from 'fast-check';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtInProjections } from '../../projections/index.js';
import { migrateToLatest } from '../../src/migrate-to-latest.js';
import type { DB } from '../../src/db/schema.js';
import type { Projection } from '../../src/projector/projection.js';
import { foldWholeLogSql } from '../../src/projector/projection.js';
import { Projector } from '../../src/projector/projector.js';
import { rebuildProjection } from '../../src/projector/rebuild-projection.js';
import { encodeEventText } from '../../src/events/encode-event.js';
import { EventStore } from '../../src/store/event-store.js';
import { wholeLogStatements } from '../../bench/citus-limit.js';
import { arbitraryShapedLog } from '../support/arbitrary-shapes.js';
import { gatedToolsProjection } from '../support/gated-tools-projection.js';
import { kindCountsProjection } from '../support/kind-counts-projection.js';
import { suspensionsProjection } from '../support/suspensions-projection.js';
import { onCitus, useTestDatabase } from '../support/test-database.js';

/**
 * Every way a batch of a projection runs folds the same: the daemon's (a pool connection of its
 * own, each statement prepared once), on any Kysely (a connection lent by kysely), a rebuild's
 * (every batch inside one transaction, a failing one undone to a savepoint), and the whole log
 * in one statement (`foldWholeLogSql`, the benchmark's limit), for every projection and batch
 * shape: events in any shape, unreadable ones, any batch size, with and without --skip-invalid.
 * They share one definition (`batchSql` for the first three, the projection's `foldStatements` for
 * all four); this proves the connections around it change nothing.
 */
const testDb = useTestDatabase();
const projections: readonly Projection[] = [...builtInProjections, gatedToolsProjection, kindCountsProjection, suspensionsProjection];
let anyKysely: Kysely<DB>;
let run = 0;

beforeAll(async () => {
  await migrateToLatest(testDb.db, projections);
  anyKysely = new Kysely<DB>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: testDb.url, max: 2 }) }) });
});

afterAll(async () => {
  await anyKysely?.destroy();
});

/** Each session's snapshot JSON as the projection's view holds it now. */
async function snapshots(db: Kysely<DB>, projection: Projection, sessionIds: readonly string[]): Promise<Map<string, string>> {
  const { rows } = await sql<{ session_id: string; json: string }>`
    SELECT session_id, snapshot::text AS json FROM ${sql.table(projection.snapshotView)} WHERE session_id IN (${sql.join(sessionIds)})`.execute(db);
  return new Map(rows.map((row) => [row.session_id, row.json]));
}

describe('batch paths', () => {
  it('the daemon, any Kysely, a rebuild and the whole-log fold give every projection the same tables', async () => {
    const seen = { wholeLogCompared: 0, stopped: 0 };
    await fc.assert(
      fc.asyncProperty(
        fc.array(arbitraryShapedLog({ maxLength: 25 }), { minLength: 1, maxLength: 5 }),
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 1, max: 30 }),
        fc.boolean(),
        async (logs, batchSize, rebuildBatchSize, skipInvalid) => {
          run += 1;
          const store = new EventStore(testDb.db);
          const sessionIds: string[] = [];
          for (const [i, texts] of logs.entries()) {
            if (texts.length === 0) continue;
            const sessionId = `path-${run}-${i}`;
            sessionIds.push(sessionId);
            await store.appendEncoded(sessionId, texts.map((text) => encodeEventText(text, { sessionId })));
          }
          if (sessionIds.length === 0) return;
          for (const projection of projections) {
            // The daemon's path on os-audit's database; a connection lent by kysely on any other.
            const db = run % 2 === 0 ? testDb.db : anyKysely;
            await new Projector(db, projection, { batchSize, skipInvalid }).catchUp();
            const projected = await snapshots(testDb.db, projection, sessionIds);
            const { rows: stops } = await sql<{ session_id: string }>`
              SELECT session_id FROM projection_blocked_sessions WHERE projection = ${projection.name} AND session_id IN (${sql.join(sessionIds)})
              UNION SELECT session_id FROM projection_errors WHERE projection = ${projection.name} AND session_id IN (${sql.join(sessionIds)})`.execute(testDb.db);
            seen.stopped += stops.length;

            await rebuildProjection(testDb.db, projection, { batchSize: rebuildBatchSize, skipInvalid });
            expect(await snapshots(testDb.db, projection, sessionIds), `${projection.name}: rebuilt`).toEqual(projected);

            // The whole log at once, into emptied tables, undone after: for the sessions read whole.
            const whole = await testDb.db
              .transaction()
              .execute(async (trx) => {
                for (const table of projection.tables) await sql`DELETE FROM ${sql.table(table)}`.execute(trx);
                // On Citus, the cluster's whole-log fold (the benchmark's limit there): Citus refuses foldWholeLogSql's one statement.
                for (const statement of onCitus ? wholeLogStatements(projection) : [foldWholeLogSql(projection)]) await statement.execute(trx);
                const folded = await snapshots(trx, projection, sessionIds);
                throw Object.assign(new Error('undo'), { folded });
              })
              .catch((error: Error & { folded?: Map<string, string> }) => {
                if (error.folded === undefined) throw error;
                return error.folded;
              });
            const stopped = new Set(stops.map((row) => row.session_id));
            for (const sessionId of sessionIds) {
              if (stopped.has(sessionId)) continue;
              expect(whole.get(sessionId), `${projection.name}: ${sessionId} folded whole`).toBe(projected.get(sessionId));
              seen.wholeLogCompared += 1;
            }
          }
        },
      ),
      // Fewer on Citus, where each batch (of 1 to 30 events here) is a dozen distributed statements.
      { numRuns: onCitus ? 8 : 20, ...(process.env.FC_SEED ? { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH, endOnFailure: true } : {}) },
    );
    expect(seen.wholeLogCompared).toBeGreaterThan(onCitus ? 8 : 20);
    expect(seen.stopped).toBeGreaterThan(onCitus ? 2 : 5);
  }, 600_000);
});
