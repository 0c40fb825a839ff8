import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { builtInProjections } from '../../projections/index.js';
import { readConsoleAccess } from '../../src/console/console-access.js';
import { olderFormatNote } from '../../src/console/older-format.js';
import { readConsoleProjections } from '../../src/console/projections-query.js';
import { readConsoleSession } from '../../src/console/session-query.js';
import { listSessions } from '../../src/console/sessions-query.js';
import { EventStore } from '../../src/store/event-store.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();
const olderFormat = fileURLToPath(new URL('../../samples/older-format', import.meta.url));
const OLDER_NOTE = 'older runtime format: os_snapshot_v0_2_60 cannot read it';

// The console's queries, without a browser: stops of every projection, each with where and why.
describe("the console's stopped sessions", () => {
  beforeAll(async () => {
    expect((await runCliInProcess(['import', olderFormat], { env: { DATABASE_URL: testDb.url } })).code).toBe(0);
    await new EventStore(testDb.db).append('os-snapshot-stops-too', [
      { kind: 'tool_gated', turn: 1, call_id: 'c1', tool: 'shell', reason: 'ask_user' },
      { kind: 'suspended', turn: 'three', reason: 'ask_user' },
    ]);
    expect((await runCliInProcess(['project', '--once', '--metrics-port', 'off'], { env: { DATABASE_URL: testDb.url } })).code).toBe(0);
  });

  it('the filter "stopped" finds the sessions any projection stopped, each row naming the projections', async () => {
    const page = await listSessions(testDb.db, { filter: 'stopped', pageSize: 50 });
    const stops = Object.fromEntries(page.rows.map((row) => [row.sessionId, row.stops.map((stop) => `${stop.projection}@${stop.seq}`)]));
    expect(Object.keys(stops).sort()).toEqual(['older-format-000000', 'older-format-000001', 'older-format-000002', 'os-snapshot-stops-too']);
    expect(stops['os-snapshot-stops-too']).toEqual(['os_snapshot@1', 'os_snapshot_v0_2_60@1']);
    // os_snapshot reads the older format: only the v0.2.60 projection stops it.
    expect(stops['older-format-000000']).toEqual([expect.stringMatching(/^os_snapshot_v0_2_60@\d+$/)]);
  });

  it("a session's page data: every projection's stop, its event, reason and problem, and the older format's note", async () => {
    const access = await readConsoleAccess(testDb.db);
    const both = await readConsoleSession(testDb.db, builtInProjections[0]!, access, { sessionId: 'os-snapshot-stops-too' });
    expect(both!.stops.map(({ projection, seq, kind, reason }) => ({ projection, seq, kind, reason }))).toEqual([
      { projection: 'os_snapshot', seq: 1, kind: 'suspended', reason: 'unreadable' },
      { projection: 'os_snapshot_v0_2_60', seq: 1, kind: 'suspended', reason: 'unreadable' },
    ]);
    expect(both!.stops.map(olderFormatNote)).toEqual([undefined, undefined]);
    const older = await readConsoleSession(testDb.db, builtInProjections[0]!, access, { sessionId: 'older-format-000000' });
    expect(older!.stops).toHaveLength(1);
    expect(older!.stops[0]).toMatchObject({ projection: 'os_snapshot_v0_2_60', kind: 'budget_exceeded', problem: 'field "operation_id": missing or null' });
    expect(olderFormatNote(older!.stops[0]!)).toBe(OLDER_NOTE);
  });

  it('the projections page counts the stopped sessions of each projection', async () => {
    const counts = Object.fromEntries((await readConsoleProjections(testDb.db, await readConsoleAccess(testDb.db))).map((p) => [p.projection, p.stoppedTotal]));
    expect(counts).toEqual({ os_snapshot: 1, os_snapshot_v0_2_60: 4 });
  });

  it('marks only a v0.2.60 stop at a budget_exceeded without operation_id as the older format', () => {
    const stop = { projection: 'os_snapshot_v0_2_60', kind: 'budget_exceeded', problem: 'field "operation_id": missing or null' };
    expect(olderFormatNote(stop)).toBe(OLDER_NOTE);
    expect(olderFormatNote({ ...stop, projection: 'os_snapshot' })).toBeUndefined();
    expect(olderFormatNote({ ...stop, kind: 'signal_delivery_disposed' })).toBeUndefined();
    expect(olderFormatNote({ ...stop, problem: 'field "budget": missing or null' })).toBeUndefined();
  });
});
