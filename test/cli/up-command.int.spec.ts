import { createServer, type Server } from 'node:net';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { startCli } from '../support/cli-process.js';
import { pollUntil } from '../support/daemon-process.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();

/** A port some other program holds while the test runs. */
let holder: Server | undefined;
async function busyPort(): Promise<number> {
  holder = createServer();
  await new Promise<void>((resolve) => holder!.listen(0, '127.0.0.1', resolve));
  return (holder.address() as { port: number }).port;
}
afterEach(async () => {
  await new Promise((resolve) => (holder ? holder.close(resolve) : resolve(undefined)));
  holder = undefined;
});

const busyLine = (port: number) =>
  new RegExp(
    `^os-audit: cannot serve metrics on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE.* \\(set --metrics-port or OS_AUDIT_METRICS_PORT to another port, 0 for any free one, off for none; or --metrics-host or OS_AUDIT_METRICS_HOST to another address\\)\\n$`,
    'm',
  );

describe('os-audit up', () => {
  it('fails on a busy metrics port before saying it is up, naming --metrics-port and OS_AUDIT_METRICS_PORT, from the flag or the variable', async () => {
    const port = await busyPort();
    const env = { DATABASE_URL: testDb.url, OS_AUDIT_LOG_LEVEL: 'warn' };
    for (const run of [
      await runCliInProcess(['up', '--metrics-port', String(port)], { env }),
      await runCliInProcess(['up'], { env: { ...env, OS_AUDIT_METRICS_PORT: String(port) } }),
    ]) {
      expect(run.code).toBe(1);
      expect(run.stdout).not.toContain('os-audit is up');
      expect(run.stderr).toMatch(busyLine(port));
    }
    const project = await runCliInProcess(['project', '--metrics-port', String(port)], { env });
    expect(project.code).toBe(1);
    expect(project.stderr).toMatch(busyLine(port));
  });

  it("takes the daemon's flags, and says it is up once the console's port is bound, with its URL", async () => {
    const up = startCli(['up', '--metrics-port', '0', '--owner', 'up-with-flags', '--projection', 'os_snapshot', '--lease-ttl', '1500'], { databaseUrl: testDb.url });
    let stdout = '';
    up.child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    try {
      const consoleUrl = await pollUntil('up to say it is up', async () => /^ {2}console {5}(http:\/\/127\.0\.0\.1:\d+\/)$/m.exec(stdout)?.[1], {
        timeoutMs: 60_000,
        explain: () => stdout,
      });
      expect(stdout).toMatch(/^os-audit is up: /m);
      // Bound before the message: its health answers at once.
      expect((await fetch(new URL('healthz', consoleUrl))).status).toBe(200);
      const leases = await pollUntil('the lease of up-with-flags', async () => {
        const rows = await testDb.db.selectFrom('projection_leases').select(['projection', 'owner']).where('owner', '=', 'up-with-flags').execute();
        return rows.length > 0 && rows;
      });
      // --projection: that one alone.
      expect(leases).toEqual([{ projection: 'os_snapshot', owner: 'up-with-flags' }]);
    } finally {
      up.child.kill('SIGTERM');
    }
    expect((await up.result).code).toBe(0);
  }, 90_000);

  it('`up --import samples` (npm start) folds every sample under every built-in projection: no stopped session, no error logged', async () => {
    const up = startCli(['up', '--import', 'samples', '--metrics-port', '0'], { databaseUrl: testDb.url });
    let stdout = '';
    let stderr = '';
    up.child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    up.child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      await pollUntil('up to say it is up', async () => stdout.includes('Stop with Ctrl-C.'), { timeoutMs: 60_000, explain: () => stdout + stderr });
      // The older-format samples are in a folder of their own, which `npm start` does not import.
      expect(stdout).toMatch(/^imported \d+ new events; 0 were already stored \(14 sessions from 14 files\)$/m);
      expect(stderr).toContain('ignored 1 entry, not a <session_id>.jsonl file: older-format\n');
      const projections = await pollUntil('both built-ins to fold every sample', async () => {
        const { rows } = await sql<{ projection: string }>`
          SELECT projection FROM projection_checkpoints WHERE position = (SELECT max(position) FROM session_events) ORDER BY projection`.execute(testDb.db);
        return rows.length === 2 && rows.map((row) => row.projection);
      });
      expect(projections).toEqual(['os_snapshot', 'os_snapshot_v0_2_60']);
      expect(await testDb.db.selectFrom('projection_blocked_sessions').selectAll().execute()).toEqual([]);
    } finally {
      up.child.kill('SIGTERM');
    }
    expect((await up.result).code).toBe(0);
    const logged = stderr.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { level: string; event?: string });
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.filter((entry) => entry.level === 'error' || entry.level === 'fatal' || entry.event === 'sessions_stopped')).toEqual([]);
  }, 90_000);

  it('prints no console line with --metrics-port off, and refuses a bad daemon setting before it migrates', async () => {
    const env = { DATABASE_URL: testDb.url };
    const bad = await runCliInProcess(['up', '--batch-size', '0'], { env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--batch-size <events>' argument '0' is invalid/);
    const badVariable = await runCliInProcess(['up'], { env: { ...env, OS_AUDIT_LEASE_TTL_MS: 'long' } });
    expect(badVariable).toMatchObject({ code: 2, stdout: '' });
    expect(badVariable.stderr).toMatch(/^os-audit: invalid OS_AUDIT_LEASE_TTL_MS="long"/);

    const up = startCli(['up', '--metrics-port', 'off'], { databaseUrl: testDb.url });
    let stdout = '';
    up.child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    try {
      await pollUntil('up to say it is up', async () => stdout.includes('Stop with Ctrl-C.'), { timeoutMs: 60_000, explain: () => stdout });
      expect(stdout).not.toContain('console');
    } finally {
      up.child.kill('SIGTERM');
    }
    expect((await up.result).code).toBe(0);
  }, 90_000);
});
