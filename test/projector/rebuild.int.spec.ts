import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { osSnapshotProjection } from '../../projections/os-snapshot/os-snapshot-projection.js';
import { verifyOsSnapshots } from '../../src/deprecated-os-snapshot.js';
import { rebuildProjection } from '../../src/projector/rebuild-projection.js';
import { EventStore } from '../../src/store/event-store.js';
import { sampleEvent } from '../support/log-files.js';
import { osSnapshotProjector } from '../support/projector-harness.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();
const SESSIONS = 40;

describe('rebuild', () => {
  it('refolds everything in one transaction: readers see the old tables or the new ones, never half', async () => {
    const store = new EventStore(testDb.db);
    for (let session = 0; session < SESSIONS; session += 1) {
      await store.append(`rb-${session}`, Array.from({ length: 50 }, (_, seq) => sampleEvent(seq)));
    }
    await osSnapshotProjector(testDb.db).catchUp();
    // Damage a snapshot by hand: verify must see it, rebuild must mend it.
    await testDb.db.updateTable('os_snapshots').set({ tool_gated_count: 99 }).where('session_id', '=', 'rb-7').execute();
    const damaged = await runCliInProcess(['verify', 'rb-7', 'rb-8'], { env: { DATABASE_URL: testDb.url } });
    expect(damaged.code).toBe(1);
    expect(damaged.stdout).toContain('session "rb-7" differs from its log:\n  tool_gated_count: sql 99, log 10\n');
    expect(damaged.stdout).toContain('os_snapshot: verified 2 sessions: 1 differs from its log');

    const reader = new pg.Client({ connectionString: testDb.url });
    await reader.connect();
    const seen: string[] = [];
    let reading = true;
    const readLoop = (async () => {
      while (reading) {
        const { rows } = await reader.query<{ sessions: string; processes: string; damaged: number }>(
          `SELECT (SELECT count(*) FROM os_snapshots) AS sessions, (SELECT count(*) FROM os_processes) AS processes,
                  (SELECT tool_gated_count FROM os_snapshots WHERE session_id = 'rb-7')::int AS damaged`,
        );
        seen.push(`${rows[0]!.sessions}/${rows[0]!.processes}/${rows[0]!.damaged}`);
      }
    })();
    try {
      const report = await rebuildProjection(testDb.db, osSnapshotProjection, { batchSize: 100 });
      expect(report.eventsApplied).toBe(SESSIONS * 50);
    } finally {
      reading = false;
      await readLoop;
      await reader.end();
    }
    const states = new Set(seen);
    expect(seen.length).toBeGreaterThan(1);
    expect([...states].every((state) => state === `${SESSIONS}/${SESSIONS * 3}/99` || state === `${SESSIONS}/${SESSIONS * 3}/10`)).toBe(true);
    expect(await verifyOsSnapshots(testDb.db, { all: true })).toMatchObject({ checked: SESSIONS, mismatches: [], pending: [] });
  });

  it('fences a running daemon out, which then carries on from the rebuilt checkpoint', async () => {
    const events: string[] = [];
    const stop = new AbortController();
    const daemon = osSnapshotProjector(testDb.db, { onEvent: (event) => events.push(event.type) });
    const running = daemon.run(stop.signal);
    await expect.poll(() => events.includes('leader')).toBe(true);

    const rebuilt = await runCliInProcess(['rebuild'], { env: { DATABASE_URL: testDb.url } });
    expect(rebuilt).toMatchObject({ code: 0, stdout: expect.stringContaining(`rebuilt os_snapshot (version 1) from ${SESSIONS * 50} events\n`) });
    await new EventStore(testDb.db).append('rb-after', [sampleEvent(0), sampleEvent(1)]);
    await expect
      .poll(async () => (await testDb.db.selectFrom('os_snapshots').select('last_seq').where('session_id', '=', 'rb-after').executeTakeFirst())?.last_seq, { timeout: 15_000 })
      .toBe(1);
    expect(events).toContain('standby');
    stop.abort();
    await running;
    expect(await verifyOsSnapshots(testDb.db, { all: true })).toMatchObject({ mismatches: [], pending: [] });
  });
});
