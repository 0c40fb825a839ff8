import fc from 'fast-check';
import { type RawBuilder, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { osSnapshotJsonSql } from '../../projections/os-snapshot/migrations/0000-tables.js';
import { osSnapshotProjection } from '../../projections/os-snapshot/os-snapshot-projection.js';
import { osSnapshotV0260JsonSql } from '../../projections/os-snapshot-v0-2-60/migrations/0002-snapshot-view.js';
import { osSnapshotV0260Projection } from '../../projections/os-snapshot-v0-2-60/os-snapshot-v0-2-60-projection.js';
import { migrateToLatest } from '../../src/migrate-to-latest.js';
import type { JsonValue } from '../../src/json/json-value.js';
import type { Projection } from '../../src/projector/projection.js';
import { Projector } from '../../src/projector/projector.js';
import { verifyProjection } from '../../src/projector/verify-projection.js';
import { EventStore } from '../../src/store/event-store.js';
import { arbitrarySessionLog } from '../support/arbitrary-events.js';
import { arbitraryV0260Log } from '../support/arbitrary-v0-2-60-events.js';
import { migrateTo } from '../support/migrate-to.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();

interface Case {
  projection: Projection<any>;
  heads: string;
  json: RawBuilder<unknown>;
  /** The migration that makes the view call its function, and the one just before it. */
  migration: string;
  before: string;
  /** Logs its fold reads, every kind and unreadable events among them. */
  logs: fc.Arbitrary<unknown[][]>;
}

const CASES: Case[] = [
  {
    projection: osSnapshotProjection,
    heads: 'os_snapshots',
    json: osSnapshotJsonSql,
    migration: 'os_snapshot/0001-snapshot-json-planned-once',
    before: 'os_snapshot/0000-tables',
    logs: fc.array(arbitrarySessionLog({ maxLength: 40 }), { minLength: 1, maxLength: 3 }),
  },
  {
    projection: osSnapshotV0260Projection,
    heads: 'os_v0_2_60_snapshots',
    json: osSnapshotV0260JsonSql,
    migration: 'os_snapshot_v0_2_60/0004-snapshot-json-planned-once',
    before: 'os_snapshot_v0_2_60/0003-dashboard-views',
    logs: fc.array(arbitraryV0260Log({ unreadable: true, maxLength: 30 }), { minLength: 1, maxLength: 3 }),
  },
];

let run = 0;

describe.each(CASES)('$projection.snapshotView, planned once per connection ($migration)', ({ projection, heads, json, migration, before, logs }) => {
  const view = projection.snapshotView;

  /** The plan of a one-session lookup, as a dashboard sends it. */
  async function lookupPlan(): Promise<string> {
    const { rows } = await sql<{ 'QUERY PLAN': string }>`
      EXPLAIN (COSTS OFF) SELECT snapshot FROM ${sql.table(view)} WHERE session_id = 'any'`.execute(testDb.db);
    return rows.map((row) => row['QUERY PLAN']).join('\n');
  }

  async function snapshots(): Promise<{ session_id: string; snapshot: string }[]> {
    const { rows } = await sql<{ session_id: string; snapshot: string }>`
      SELECT session_id, snapshot::text AS snapshot FROM ${sql.table(view)} ORDER BY session_id`.execute(testDb.db);
    return rows;
  }

  it("holds the fold's JSON, and its first migration's, on random logs", async () => {
    await fc.assert(
      fc.asyncProperty(logs, async (sessions) => {
        run += 1;
        const store = new EventStore(testDb.db);
        for (const [i, log] of sessions.entries()) if (log.length > 0) await store.append(`${view}-${run}-${i}`, log as JsonValue[]);
        await new Projector(testDb.db, projection).catchUp();
      }),
      { numRuns: 20 },
    );
    const report = await verifyProjection(testDb.db, projection, { all: true });
    expect(report.checked).toBeGreaterThan(20);
    expect(report.mismatches).toEqual([]);
    const { rows } = await sql<{ session_id: string }>`
      SELECT session_id FROM ${sql.table(view)} AS j JOIN ${sql.table(heads)} AS s USING (session_id)
      WHERE j.snapshot::text IS DISTINCT FROM (${json})::text`.execute(testDb.db);
    expect(rows).toEqual([]);
  });

  it('looks a session up by primary key alone: the lists are read inside the function, by its kept plan', async () => {
    const plan = await lookupPlan();
    expect(plan).toMatch(new RegExp(`Index Scan using ${heads}_pkey on ${heads}`));
    expect(plan).not.toMatch(/SubPlan|_processes|_signals|_budget/);
  });

  it("reads the tables of its own schema whatever the reader's search_path", async () => {
    const { rows } = await sql<{ schema: string }>`SELECT current_schema() AS schema`.execute(testDb.db);
    const qualified = await testDb.db.connection().execute(async (connection) => {
      await sql`SET search_path TO pg_catalog`.execute(connection);
      try {
        return await sql<{ session_id: string; snapshot: string }>`
          SELECT session_id, snapshot::text AS snapshot FROM ${sql.id(rows[0]!.schema, view)} ORDER BY session_id`.execute(connection);
      } finally {
        await sql`RESET search_path`.execute(connection);
      }
    });
    expect(qualified.rows.length).toBeGreaterThan(20);
    expect(qualified.rows).toEqual(await snapshots());
  });

  it('goes down to the plain view and up again, the JSON unchanged', async () => {
    // Down to `before` undoes every later migration (of either projection): migrated to the latest again at the end.
    const planned = await snapshots();
    await migrateTo(testDb.db, before);
    expect(await lookupPlan()).toMatch(/SubPlan/);
    const { rows } = await sql<{ present: boolean }>`SELECT to_regproc(${`${view}_of`}) IS NOT NULL AS present`.execute(testDb.db);
    expect(rows[0]!.present).toBe(false);
    expect(await snapshots()).toEqual(planned);

    await migrateTo(testDb.db, migration);
    expect(await lookupPlan()).not.toMatch(/SubPlan/);
    expect(await snapshots()).toEqual(planned);
    await migrateToLatest(testDb.db);
  });
});
