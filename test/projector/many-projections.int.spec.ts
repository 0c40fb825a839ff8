import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { builtInProjections } from '../../projections/index.js';
import { storeIsDistributed } from '../../src/db/distributed-store.js';
import { migrateToLatest } from '../../src/migrate-to-latest.js';
import { EventStore } from '../../src/store/event-store.js';
import { pollUntil } from '../support/daemon-process.js';
import { gatedToolsProjection } from '../support/gated-tools-projection.js';
import { parseSamples } from '../observability/prometheus-samples.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { useDaemonProcesses } from '../support/use-daemon-processes.js';
import { useTestDatabase } from '../support/test-database.js';

/**
 * One daemon, many projections: each with its own checkpoint, lease, errors and metrics, so
 * that one halted projection holds no other back.
 */
const testDb = useTestDatabase();
const startDaemon = useDaemonProcesses();
const projections = [...builtInProjections, gatedToolsProjection];
const env = { OS_AUDIT_PROJECTIONS: 'test/support/gated-tools-projection.ts', OS_AUDIT_LOG_FORMAT: 'json' };
const cli = (args: string[]) => runCliInProcess(args, { env: { DATABASE_URL: testDb.url, ...env } });

const gated = (turn: number, tool: string) => ({ kind: 'tool_gated', turn, call_id: `c${turn}`, tool, reason: 'ask_user' });

/** How far the projection's checkpoint is: its position; on Citus, which has none (a batch reads by seq), the events it counts. */
async function checkpointPosition(projection: string): Promise<number> {
  const row = await testDb.db.selectFrom('projection_checkpoints').select(['position', 'events_applied']).where('projection', '=', projection).executeTakeFirstOrThrow();
  return Number((await storeIsDistributed(testDb.db)) ? row.events_applied : row.position);
}

describe('one daemon, several projections', () => {
  it('folds every projection; one at another version is refused alone, named in /readyz and status, until it is rebuilt', { timeout: 120_000 }, async () => {
    await migrateToLatest(testDb.db, projections);
    // Its tables "hold another version": its batches must refuse to fold, the others must not care.
    await sql`UPDATE projection_checkpoints SET version = 7 WHERE projection = 'gated_tools'`.execute(testDb.db);
    const store = new EventStore(testDb.db);
    for (let session = 0; session < 5; session++) {
      await store.append(`s${session}`, [gated(1, 'shell'), { kind: 'page_out', turn: 1, entry_count: 2 }, gated(2, `tool-${session}`)]);
    }

    const daemon = startDaemon(testDb.url, { owner: 'many', env });
    const started = await daemon.waitForLog('started');
    expect(started.projections).toEqual(projections.map((projection) => projection.name));
    const url = await daemon.metricsUrl();
    const last = await pollUntil('os_snapshot to fold every event', async () => (await checkpointPosition('os_snapshot')) > 0 && (await checkpointPosition('os_snapshot')));
    expect(last).toBeGreaterThan(0);
    expect(await checkpointPosition('gated_tools')).toBe(0);

    const refused = await pollUntil('/readyz to name gated_tools', async () => {
      const response = await fetch(`${url}/readyz`);
      const body = (await response.json()) as { reason?: string; projections: { projection: string; ready: boolean }[] };
      return response.status === 503 && body.reason?.startsWith('gated_tools: ') && body;
    });
    expect(refused.reason).toContain('its tables hold version 7 of its fold, and this os-audit folds version 1: run os-audit rebuild --projection gated_tools');
    expect(refused.projections.filter((p) => p.ready).map((p) => p.projection)).toEqual(builtInProjections.map((p) => p.name));
    const status = await cli(['status', '--projection', 'gated_tools']);
    expect(status.stdout).toMatch(/^projection gated_tools \(version 7\)/);
    expect(status.stdout).toContain('run os-audit rebuild --projection gated_tools');

    // Appends meanwhile still reach the built-in projections.
    await store.append('later', [gated(1, 'late')]);
    await pollUntil('os_snapshot to fold the later session', async () => (await checkpointPosition('os_snapshot')) > last);

    // The rebuild folds it at this version; the daemon carries on with it from there.
    expect(await cli(['rebuild', '--projection', 'gated_tools'])).toMatchObject({ code: 0, stdout: 'rebuilt gated_tools (version 1) from 16 events\n' });
    await store.append('after', [gated(1, 'after')]);
    await pollUntil('gated_tools to fold the session appended after the rebuild', async () => {
      const { rows } = await sql`SELECT FROM gated_tool_heads WHERE session_id = 'after'`.execute(testDb.db);
      return rows.length === 1;
    });
    await pollUntil('/readyz 200', async () => (await fetch(`${url}/readyz`)).status === 200, { timeoutMs: 30_000 });
    // Each projection folds on its own (on Citus, each session on its own too): verify once none is behind.
    await pollUntil('every projection to fold every event', async () => {
      const { rows } = await sql<{ behind: number }>`SELECT coalesce(sum(lag_events), 0)::int AS behind FROM os_projection_lag`.execute(testDb.db);
      return rows[0]!.behind === 0;
    });

    const verified = await cli(['verify', '--all']);
    expect(verified.code, verified.stdout).toBe(0);
    for (const projection of projections) expect(verified.stdout).toContain(`${projection.name}: verified 7 sessions: 0 differ from their log\n`);
    expect(await cli(['snapshot', 's3', '--projection', 'gated_tools'])).toMatchObject({
      code: 0,
      stdout: '{\n  "gated": 2,\n  "tools": [\n    "shell",\n    "tool-3"\n  ]\n}\n',
    });

    const samples = parseSamples(await (await fetch(`${url}/metrics`)).text()).filter((sample) => sample.name === 'os_audit_events_projected_total');
    expect(Object.fromEntries(samples.map((sample) => [sample.labels.projection, sample.value]))).toMatchObject({ os_snapshot: 17, gated_tools: 1 });
    expect(await daemon.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  });
});
