import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { DB } from '../../src/db/schema.js';
import { builtInProjections } from '../../projections/index.js';
import { migrateToLatest } from '../../src/migrate-to-latest.js';
import { Projector } from '../../src/projector/projector.js';
import { readProjectionStatus } from '../../src/projector/projection-status.js';
import { rebuildProjection } from '../../src/projector/rebuild-projection.js';
import type { StoppedSession } from '../../src/projector/sql/batch-sql.js';
import { EventStore } from '../../src/store/event-store.js';
import { gatedToolsProjection } from '../support/gated-tools-projection.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase({ perTest: true });

const gatedTools = gatedToolsProjection;

/** Its tables, by its own migration, registered by the engine as `os-audit migrate` does. */
async function createGatedTools(): Promise<void> {
  await migrateToLatest(testDb.db, [...builtInProjections, gatedTools]);
}

const gated = (tool: string) => ({ kind: 'tool_gated', turn: 1, call_id: 'c1', tool, reason: 'ask_user' });

describe("a projection's SQL that fails on a session's events", () => {
  it('stops that session at its first unfolded event, saying why; every other session goes on', async () => {
    await createGatedTools();
    const store = new EventStore(testDb.db);
    await store.append('fine-1', [gated('read_file'), gated('shell')]);
    await store.append('failing', [gated('read_file'), gated('shell')]);
    await store.append('failing', [gated('boom'), gated('write_file')]);
    await store.append('fine-2', [gated('shell')]);
    const stopped: StoppedSession[] = [];
    const projector = new Projector(testDb.db, gatedTools, {
      pollIntervalMs: 50,
      batchSize: 100,
      onEvent: (event) => event.type === 'sessions_stopped' && stopped.push(...event.sessions),
    });
    const report = await projector.catchUp();
    expect(stopped).toEqual([
      expect.objectContaining({ session_id: 'failing', seq: 0, reason: 'failed', problem: expect.stringMatching(/^the projection's SQL failed on the events of this session: .*check constraint "gated_tools_tool_check"/) }),
    ]);
    expect(report.eventsApplied).toBe(3);
    const heads = await sql<{ session_id: string; last_seq: number; gated: number }>`SELECT * FROM gated_tool_heads ORDER BY session_id`.execute(testDb.db);
    expect(heads.rows).toEqual([
      { session_id: 'fine-1', last_seq: 1, gated: 2 },
      { session_id: 'fine-2', last_seq: 0, gated: 1 },
    ]);
    // Later batches pass the stopped session over.
    await store.append('failing', [gated('shell')]);
    await store.append('fine-2', [gated('shell')]);
    expect(await projector.catchUp()).toMatchObject({ eventsApplied: 1 });
    expect(stopped).toHaveLength(1);
  });

  it('stops that session in a rebuild too, which completes', async () => {
    await createGatedTools();
    const store = new EventStore(testDb.db);
    await store.append('fine', [gated('read_file')]);
    await store.append('failing', [gated('shell'), gated('boom'), gated('shell')]);
    const report = await rebuildProjection(testDb.db, gatedTools, { batchSize: 100 });
    expect(report).toMatchObject({ eventsApplied: 1, stopped: 1 });
    const blocked = await sql<{ session_id: string; seq: number; reason: string }>`
      SELECT session_id, seq, reason FROM projection_blocked_sessions WHERE projection = 'gated_tools'`.execute(testDb.db);
    expect(blocked.rows).toEqual([{ session_id: 'failing', seq: 0, reason: 'failed' }]);
    expect((await sql<{ session_id: string }>`SELECT session_id FROM gated_tool_heads`.execute(testDb.db)).rows).toEqual([{ session_id: 'fine' }]);
  });

  it('stops the session whose value exceeds a limit of the database (an index entry too large), not the projection', async () => {
    await createGatedTools();
    await sql`CREATE INDEX gated_tools_tool_idx ON gated_tools (tool)`.execute(testDb.db);
    const store = new EventStore(testDb.db);
    const incompressible = Array.from({ length: 2000 }, (_, i) => ((i * 7919) % 65_521).toString(36)).join('');
    await store.append('huge', [gated(incompressible)]);
    await store.append('fine', [gated('shell')]);
    const report = await new Projector(testDb.db, gatedTools, { pollIntervalMs: 50 }).catchUp();
    expect(report).toMatchObject({ eventsApplied: 1, stopped: 1 });
    const blocked = await sql<{ problem: string }>`SELECT problem FROM projection_blocked_sessions WHERE session_id = 'huge'`.execute(testDb.db);
    expect(blocked.rows[0]!.problem).toMatch(/index row size/);
  });

  it('stops that session on a database not opened by os-audit (any Kysely) too', async () => {
    await createGatedTools();
    const store = new EventStore(testDb.db);
    await store.append('failing', [gated('boom')]);
    await store.append('fine', [gated('shell')]);
    const own = new Kysely<DB>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: testDb.url, max: 2 }) }) });
    try {
      const report = await new Projector(own, gatedTools, { pollIntervalMs: 50 }).catchUp();
      expect(report).toMatchObject({ eventsApplied: 1, stopped: 1 });
    } finally {
      await own.destroy();
    }
  });

  it('retries a batch that fails for another reason (its table is missing), and status shows the error until a batch moves on', async () => {
    await sql`INSERT INTO projection_checkpoints (projection) VALUES ('gated_tools')`.execute(testDb.db);
    await new EventStore(testDb.db).append('any', [gated('shell')]);
    const stop = new AbortController();
    const retries: Error[] = [];
    const projector = new Projector(testDb.db, gatedTools, {
      pollIntervalMs: 50,
      onEvent: (event) => {
        if (event.type !== 'retry') return;
        retries.push(event.error);
        stop.abort();
      },
    });
    await projector.run(stop.signal);
    expect(retries[0]!.message).toMatch(/^projection gated_tools: batch failed: relation "gated_tool_heads" does not exist/);
    expect((await readProjectionStatus(testDb.db, 'gated_tools')).lastError).toMatchObject({ message: (retries[0]!.cause as Error).message, at: expect.any(Date) });

    await sql`CREATE TABLE gated_tool_heads (session_id text PRIMARY KEY, last_seq bigint NOT NULL, gated bigint NOT NULL)`.execute(testDb.db);
    await sql`CREATE TABLE gated_tools (session_id text, seq bigint, tool text, PRIMARY KEY (session_id, seq))`.execute(testDb.db);
    expect(await projector.catchUp()).toMatchObject({ eventsApplied: 1 });
    expect((await readProjectionStatus(testDb.db, 'gated_tools')).lastError).toBeNull();
  });
});
