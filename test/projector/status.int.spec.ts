import { sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { builtInProjections } from '../../projections/index.js';
import { migrateToLatest } from '../../src/migrate-to-latest.js';
import { type ProjectionStatus, readProjectionStatus } from '../../src/projector/projection-status.js';
import { EventStore } from '../../src/store/event-store.js';
import { sampleEvent } from '../support/log-files.js';
import { osSnapshotProjector } from '../support/projector-harness.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { onCitus, useTestDatabase } from '../support/test-database.js';
import toolGatesProjections from '../support/tool-gates-projection.js';

const testDb = useTestDatabase();

describe('status', () => {
  it('counts the events and seconds behind, and names the open transaction that holds the horizon', async () => {
    const holder = new pg.Client({ connectionString: testDb.url, application_name: 'horizon-holder' });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      const { rows } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_current_xact_id()');
      await new Promise((resolve) => setTimeout(resolve, 100));
      await new EventStore(testDb.db).append('held-1', [sampleEvent(0), sampleEvent(1), sampleEvent(2)]);

      const status = await readProjectionStatus(testDb.db, 'os_snapshot');
      expect(status.behind.events).toBe(3);
      expect(status.behind.seconds).toBeGreaterThanOrEqual(0);
      if (onCitus) {
        // Nothing holds committed events back on Citus: the projector reads each session by seq.
        expect(status.horizonHeldBy).toBeNull();
        expect((await osSnapshotProjector(testDb.db).catchUp()).eventsApplied).toBe(3);
      } else {
        expect(status.horizonHeldBy).not.toBeNull();
        // The oldest open transaction on the server: ours, unless another one is older still.
        if (status.horizonHeldBy!.pid !== rows[0]!.pid) {
          expect(status.horizonHeldBy!.transactionAgeSeconds).toBeGreaterThanOrEqual(0.1);
        } else {
          expect(status.horizonHeldBy).toMatchObject({ application: 'horizon-holder', state: 'idle in transaction' });
          const printed = await runCliInProcess(['status'], { env: { DATABASE_URL: testDb.url } });
          expect(printed.stdout).toMatch(new RegExp(`held back: +committed events wait for an older open transaction: pid ${rows[0]!.pid} .*application "horizon-holder", state idle in transaction`));
        }
      }
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
    await osSnapshotProjector(testDb.db).catchUp();
    const caughtUp = await readProjectionStatus(testDb.db, 'os_snapshot');
    expect(caughtUp).toMatchObject({ behind: { events: 0, seconds: 0 }, horizonHeldBy: null, lastError: null });
    expect(caughtUp.checkpoint.eventsApplied).toBe(3);
    expect(caughtUp.leader).toMatchObject({ live: false });
  });

  it('prints JSON with --json', async () => {
    const run = await runCliInProcess(['status', '--json'], { env: { DATABASE_URL: testDb.url } });
    expect(run.code).toBe(0);
    const statuses = JSON.parse(run.stdout) as ProjectionStatus[];
    expect(statuses.map((status) => status.projection)).toEqual(builtInProjections.map((projection) => projection.name));
    expect(statuses[0]).toMatchObject({ projection: 'os_snapshot', version: 1, behind: { events: 0 } });
    const one = await runCliInProcess(['status', '--json', '--projection', 'os_snapshot'], { env: { DATABASE_URL: testDb.url } });
    expect(JSON.parse(one.stdout)).toMatchObject([{ projection: 'os_snapshot' }]);
    const unknown = await runCliInProcess(['status', '--projection', 'nope'], { env: { DATABASE_URL: testDb.url } });
    expect(unknown).toMatchObject({ code: 2, stderr: expect.stringContaining('no projection "nope"; the projections are os_snapshot') });
  });
});

describe('status after project --once', () => {
  const cli = (...args: string[]) =>
    runCliInProcess([...args, '--projection', 'tool_gates'], { env: { DATABASE_URL: testDb.url, OS_AUDIT_PROJECTIONS: 'test/support/tool-gates-projection.ts' } });
  const gated = (turn: number, tool: string) => ({ kind: 'tool_gated', turn, call_id: `c${turn}`, tool, reason: 'ask_user' });
  const cause = 'ON CONFLICT DO UPDATE command cannot affect row a second time';

  it('shows the error of its failed batch, which project --once printed naming the projection, until a batch folds', async () => {
    await migrateToLatest(testDb.db, toolGatesProjections);
    // Two gates of one tool in one batch: the projection's upsert meets its row twice.
    await new EventStore(testDb.db).append('gates-twice', [gated(1, 'shell'), gated(2, 'shell')]);

    const once = await cli('project', '--once');
    expect(once.code).toBe(1);
    expect(once.stderr).toMatch(new RegExp(`^os-audit: projection tool_gates: batch failed: ${cause}$`, 'm'));

    const halted = await cli('status');
    expect(halted.code).toBe(1);
    expect(halted.stdout).toMatch(new RegExp(`^  last error: ${cause} \\(at \\d{4}-.+Z\\)$`, 'm'));
    expect(halted.stdout).toMatch(/^  halted: +yes/m);
    expect(halted.stderr).toBe(`os-audit: projection tool_gates is halted: ${cause}\n`);
    const json = await cli('status', '--json');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject([{ projection: 'tool_gates', lastError: { message: cause, at: expect.any(String) }, halted: { reason: cause } }]);

    // One event per batch: the upsert meets each row once, and the batch that folds clears the error.
    expect((await cli('project', '--once', '--batch-size', '1')).code).toBe(0);
    expect((await sql`SELECT session_id, tool, gates FROM tool_gates`.execute(testDb.db)).rows).toEqual([{ session_id: 'gates-twice', tool: 'shell', gates: 2 }]);
    const running = await cli('status', '--json');
    expect(running.code).toBe(0);
    expect(JSON.parse(running.stdout)).toMatchObject([{ lastError: null, halted: null }]);
  });
});
