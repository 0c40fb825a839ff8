import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { ProjectionStatus } from '../../src/projector/projection-status.js';
import { EventStore } from '../../src/store/event-store.js';
import { sampleEvent } from '../support/log-files.js';
import { osSnapshotProjector } from '../support/projector-harness.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase({ perTest: true });
const status = (...args: string[]) => runCliInProcess(['status', '--projection', 'os_snapshot', ...args], { env: { DATABASE_URL: testDb.url } });

describe('os-audit status exit code', () => {
  it('exits 1 while the projection is halted (a batch keeps failing), and 0 once a batch folds again', async () => {
    await new EventStore(testDb.db).append('halting', [sampleEvent(0), sampleEvent(1)]);
    // The projection's table is gone: every batch fails, and the projector retries it.
    await sql`ALTER TABLE os_snapshots RENAME TO os_snapshots_away`.execute(testDb.db);
    const stop = new AbortController();
    await osSnapshotProjector(testDb.db, { pollIntervalMs: 50, onEvent: (event) => event.type === 'retry' && stop.abort() }).run(stop.signal);
    const once = await runCliInProcess(['project', '--once', '--projection', 'os_snapshot'], { env: { DATABASE_URL: testDb.url } });
    expect(once.code).toBe(1);
    expect(once.stderr).toMatch(/^os-audit: database \w+ has no os-audit schema, or an older one than this os-audit \(projection os_snapshot: batch failed: relation "os_snapshots" does not exist\): run `os-audit migrate`$/m);

    const halted = await status();
    expect(halted.code).toBe(1);
    expect(halted.stdout).toMatch(/halted: +yes/);
    expect(halted.stderr).toMatch(/^os-audit: projection os_snapshot is halted: .*relation "os_snapshots" does not exist\n$/);
    const json = await status('--json');
    expect(json.code).toBe(1);
    expect((JSON.parse(json.stdout) as ProjectionStatus[])[0]!.halted).toMatchObject({ reason: expect.stringMatching(/os_snapshots/), since: expect.any(String) });

    await sql`ALTER TABLE os_snapshots_away RENAME TO os_snapshots`.execute(testDb.db);
    await osSnapshotProjector(testDb.db).catchUp();
    const running = await status('--json');
    expect(running).toMatchObject({ code: 0, stderr: '' });
    expect((JSON.parse(running.stdout) as ProjectionStatus[])[0]!.halted).toBeNull();
  });

  it('exits 1 with --fail-if-behind SECONDS when the projection is further behind than that, 0 within it', async () => {
    await new EventStore(testDb.db).append('behind', [sampleEvent(0)]);
    // The event waits for the projector for more than a second.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(await status()).toMatchObject({ code: 0, stderr: '' });
    const late = await status('--fail-if-behind', '1');
    expect(late.code).toBe(1);
    expect(late.stderr).toMatch(/^os-audit: projection os_snapshot is \d+\.\d s behind, more than --fail-if-behind 1\n$/);
    expect(await status('--fail-if-behind', '3600')).toMatchObject({ code: 0, stderr: '' });
    await osSnapshotProjector(testDb.db).catchUp();
    expect(await status('--fail-if-behind', '0')).toMatchObject({ code: 0, stderr: '' });
    expect((await status('--fail-if-behind', 'soon')).code).toBe(2);
  });
});
