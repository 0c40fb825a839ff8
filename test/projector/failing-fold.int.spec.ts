import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { defineEventReads, field } from '../../src/projector/event-reads.js';
import type { Projection } from '../../src/projector/projection.js';
import { Projector } from '../../src/projector/projector.js';
import type { StoppedSession } from '../../src/projector/sql/batch-sql.js';
import { EventStore } from '../../src/store/event-store.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase({ perTest: true });

/**
 * A projection whose SQL fails on some events its reads accept (a CHECK of its own table
 * refuses the tool "boom"): a fault of the projection, which must stop only that session.
 */
const gatedTools: Projection = {
  name: 'gated_tools',
  sessionHeads: 'gated_tool_heads',
  reads: defineEventReads({ tool_gated: { tool: field.string() } }),
  counters: { gated: 'tool_gated' },
  foldSql: ({ events, sessions }) => sql`
    heads AS (
      INSERT INTO gated_tool_heads AS h SELECT session_id, last_seq, gated FROM ${sessions} AS s
      ON CONFLICT (session_id) DO UPDATE SET last_seq = excluded.last_seq, gated = h.gated + excluded.gated RETURNING 1
    ),
    tools AS (INSERT INTO gated_tools SELECT session_id, seq, tool FROM ${events} AS e RETURNING 1)`,
  async clear(db) {
    await sql`DELETE FROM gated_tools; DELETE FROM gated_tool_heads`.execute(db);
  },
};

async function createGatedTools(): Promise<void> {
  await sql`CREATE TABLE gated_tool_heads (session_id text PRIMARY KEY, last_seq bigint NOT NULL, gated bigint NOT NULL)`.execute(testDb.db);
  await sql`CREATE TABLE gated_tools (session_id text, seq bigint, tool text CHECK (tool <> 'boom'), PRIMARY KEY (session_id, seq))`.execute(testDb.db);
  await sql`INSERT INTO projection_checkpoints (projection) VALUES ('gated_tools')`.execute(testDb.db);
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
});
