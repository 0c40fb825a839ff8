import { spawn } from 'node:child_process';
import { chmodSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startLocalPostgres } from '../../src/db/local-postgres.js';
import { pollUntil } from '../support/daemon-process.js';
import { useTempDir } from '../support/log-files.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { createTestDatabase } from '../support/test-database.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tempFolder = useTempDir('os-audit-embedded-');
/** A folder the server's account can enter when the tests run as root. */
const tempDir = () => {
  const dir = tempFolder();
  chmodSync(dir, 0o755);
  return dir;
};
const fixture = (name: string) => JSON.parse(readFileSync(path.join(root, 'test/fixtures/os-snapshot', name), 'utf8')) as unknown;
const serverRunning = (dataDir: string) => existsSync(path.join(dataDir, 'pgdata', 'postmaster.pid'));

// Without DATABASE_URL, every command runs on the embedded PostgreSQL of its data directory.
describe('the embedded default', () => {
  it('creates the server on first use, keeps the data between commands, and stops what it started', async () => {
    const dataDir = path.join(tempDir(), 'data');
    const env = { OS_AUDIT_DATA_DIR: dataDir };

    const imported = await runCliInProcess(['import', path.join(root, 'samples')], { env });
    expect(imported).toMatchObject({ code: 0, stdout: expect.stringMatching(/^imported \d+ new events; 0 were already stored \(14 sessions/) });
    expect(imported.stderr).toMatch(/no DATABASE_URL; creating a PostgreSQL cluster in .*data/);
    expect(serverRunning(dataDir)).toBe(false);

    expect(await runCliInProcess(['project', '--once'], { env })).toMatchObject({ code: 0, stdout: expect.stringMatching(/^projected \d+ events/) });
    const snapshot = await runCliInProcess(['snapshot', 'spec-ask-user'], { env });
    expect(snapshot.code).toBe(0);
    expect(JSON.parse(snapshot.stdout)).toEqual(fixture('os_snapshot_ask_user.json'));
    expect(serverRunning(dataDir)).toBe(false);

    const flag = await runCliInProcess(['--data-dir', dataDir, 'snapshot', 'spec-spawn-lifecycle'], { env: {} });
    expect(JSON.parse(flag.stdout)).toEqual(fixture('os_snapshot_spawn_lifecycle.json'));
  });

  it('joins a server already running on the data directory and leaves it running', async () => {
    const dataDir = path.join(tempDir(), 'data');
    const server = await startLocalPostgres({ dataDir });
    try {
      const status = await runCliInProcess(['status'], { env: { OS_AUDIT_DATA_DIR: dataDir } });
      expect(status).toMatchObject({ code: 0, stdout: expect.stringMatching(/^projection os_snapshot/) });
      expect(status.stderr).not.toMatch(/starting PostgreSQL/);
      expect(serverRunning(dataDir)).toBe(true);
    } finally {
      await server.stop();
    }
    expect(serverRunning(dataDir)).toBe(false);
  });

  it('`os-audit up --import samples` (npm start) imports, says where to look, projects, and stops cleanly on Ctrl-C', async () => {
    const dataDir = path.join(tempDir(), 'data');
    const env: NodeJS.ProcessEnv = { ...process.env, OS_AUDIT_DATA_DIR: dataDir };
    delete env.DATABASE_URL;
    const up = startUp(env);
    try {
      await pollUntil('the banner of `up`', async () => up.stdout().includes('Stop with Ctrl-C'), { timeoutMs: 90_000, explain: up.output });
      expect(up.stdout()).toMatch(/imported \d+ new events/);
      expect(up.stdout()).toMatch(/a snapshot {2}npx os-audit snapshot sample-000000/);

      // A second command joins the daemon's server and sees the projection it keeps.
      const snapshot = await pollUntil(
        'the snapshot of spec-ask-user',
        async () => {
          const run = await runCliInProcess(['snapshot', 'spec-ask-user'], { env: { OS_AUDIT_DATA_DIR: dataDir } });
          return run.code === 0 && run;
        },
        { timeoutMs: 60_000, intervalMs: 200 },
      );
      expect(JSON.parse(snapshot.stdout)).toEqual(fixture('os_snapshot_ask_user.json'));
      expect(serverRunning(dataDir)).toBe(true);
    } finally {
      up.child.kill('SIGINT');
    }
    expect(await up.exited).toBe(0);
    expect(serverRunning(dataDir)).toBe(false);
  }, 120_000);

  it('`os-audit up` on a server says where to look without printing the server\'s password', async () => {
    const server = await createTestDatabase();
    const url = new URL(server.url);
    // A trust-auth server ignores a password it is given; a password server needs its own.
    if (url.password === '') url.password = 'not-for-printing';
    const password = url.password;
    const up = startUp({ ...process.env, DATABASE_URL: url.toString(), OS_AUDIT_METRICS_PORT: '0' });
    try {
      // The banner comes just before the daemon starts; Ctrl-C is the daemon's to handle once it leads.
      await pollUntil('the daemon of `up` to lead', async () => up.stderr().includes('"event":"leader"'), { timeoutMs: 90_000, explain: up.output });
      url.password = '';
      expect(up.stdout()).toContain(`database    ${url.toString()}`);
      expect(up.stdout()).not.toContain(password);
    } finally {
      up.child.kill('SIGINT');
      expect(await up.exited).toBe(0);
      await server.drop();
    }
  }, 120_000);
});

/** `os-audit up --import samples` as a process (what `npm start` runs), its output collected. */
function startUp(env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'up', '--import', 'samples'], { cwd: root, env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return {
    child,
    exited: new Promise<number | null>((resolve) => child.once('exit', resolve)),
    stdout: () => stdout,
    stderr: () => stderr,
    output: () => `stdout: ${stdout}\nstderr: ${stderr}`,
  };
}
