import { spawn } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startLocalPostgres } from '../../src/db/local-postgres.js';
import { IDLE_SECONDS_ENV } from '../../src/db/server-idle.js';
import { pollUntil } from '../support/daemon-process.js';
import { useTempDir } from '../support/log-files.js';
import { type CliRun, runCliInProcess } from '../support/run-cli-in-process.js';
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
const registeredUsers = (dataDir: string) => readdirSync(path.join(dataDir, 'users'));
/** This process's environment without DATABASE_URL, on the embedded server of `dataDir`. */
const embeddedEnv = (dataDir: string): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env, OS_AUDIT_DATA_DIR: dataDir, OS_AUDIT_METRICS_PORT: '0', [IDLE_SECONDS_ENV]: '0' };
  delete env.DATABASE_URL;
  return env;
};

// Without DATABASE_URL, every command runs on the embedded PostgreSQL of its data directory.
describe('the embedded default', () => {
  it('creates the server on first use, keeps the data between commands, and stops what it started', async () => {
    const dataDir = path.join(tempDir(), 'data');
    const env = { OS_AUDIT_DATA_DIR: dataDir };

    const imported = await runCliInProcess(['import', path.join(root, 'samples')], { env });
    expect(imported).toMatchObject({ code: 0, stdout: expect.stringMatching(/^imported \d+ new events; 0 were already stored \(14 sessions/) });
    expect(imported.stderr).toMatch(/no DATABASE_URL; creating a PostgreSQL cluster in .*data/);
    expect(serverRunning(dataDir)).toBe(false);

    expect(await runCliInProcess(['project', '--once'], { env })).toMatchObject({ code: 0, stdout: expect.stringMatching(/^os_snapshot: projected \d+ events/m) });
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
    const up = startUp(embeddedEnv(dataDir));
    try {
      await pollUntil('the banner of `up`', async () => up.stdout().includes('Stop with Ctrl-C'), { timeoutMs: 90_000, explain: up.output });
      expect(up.stdout()).toMatch(/imported \d+ new events/);
      expect(up.stdout()).toMatch(/a snapshot {2}npx os-audit snapshot sample-000000/);
      // The generated password is named by its file, never printed.
      const passwordFile = path.join(dataDir, 'password');
      expect(up.stdout()).toMatch(new RegExp(`\n {2}database {4}postgres://postgres@127\\.0\\.0\\.1:\\d+/os_audit \\(password in ${passwordFile}\\)\n`));
      expect(up.stdout()).toMatch(new RegExp(`\n {2}overview {4}PGPASSWORD="\\$\\(cat ${passwordFile}\\)" psql 'postgres://postgres@127\\.0\\.0\\.1:\\d+/os_audit' -c`));
      expect(up.stdout()).not.toContain(readFileSync(passwordFile, 'utf8').trim());

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


// Many commands share the server of a data directory; none stops it under another.
describe('the users of the embedded server', () => {
  it('three commands at once share the server, and the last one out stops it (past a lock a dead command left)', async () => {
    const dataDir = path.join(tempDir(), 'data');
    const env = { OS_AUDIT_DATA_DIR: dataDir };
    expect(await runCliInProcess(['import', path.join(root, 'samples')], { env })).toMatchObject({ code: 0 });
    expect(await runCliInProcess(['project', '--once'], { env })).toMatchObject({ code: 0 });
    // The lock of a command killed while it held it (its pid since taken by another process).
    const lock = path.join(dataDir, 'server.lock');
    writeFileSync(lock, JSON.stringify({ pid: process.pid, started: 'before a reboot', token: 'killed' }));

    const runs = await Promise.all([
      runCliProcess(['snapshot', 'spec-ask-user'], embeddedEnv(dataDir)),
      runCliProcess(['snapshot', 'spec-spawn-lifecycle'], embeddedEnv(dataDir)),
      runCliProcess(['events', 'spec-ask-user', '--bare'], embeddedEnv(dataDir)),
    ]);
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(runs[0]!.stdout)).toEqual(fixture('os_snapshot_ask_user.json'));
    expect(JSON.parse(runs[1]!.stdout)).toEqual(fixture('os_snapshot_spawn_lifecycle.json'));
    expect(runs[2]!.stdout).toMatch(/^\{"kind":"tool_gated"/);
    expect(serverRunning(dataDir)).toBe(false);
    expect(registeredUsers(dataDir)).toEqual([]);
    expect(existsSync(lock)).toBe(false);
  }, 120_000);

  it('`import` while `up` runs leaves up its server; `db stop` refuses under up; what a `kill -9` of up leaves, the next command cleans up', async () => {
    const dataDir = path.join(tempDir(), 'data');
    const env = { OS_AUDIT_DATA_DIR: dataDir };
    const up = startCli(['up'], embeddedEnv(dataDir));
    try {
      await pollUntil('the daemon of `up` to lead', async () => up.stderr().includes('"event":"leader"'), { timeoutMs: 90_000, explain: up.output });
      const imported = await runCliProcess(['import', path.join(root, 'samples', 'spec-ask-user.jsonl')], embeddedEnv(dataDir));
      expect(imported.code, imported.stderr).toBe(0);
      expect(serverRunning(dataDir)).toBe(true);
      // The daemon of `up` goes on projecting on its server after `import` ended.
      const snapshot = await pollUntil(
        'the snapshot of spec-ask-user',
        async () => {
          const run = await runCliInProcess(['snapshot', 'spec-ask-user'], { env });
          return run.code === 0 && run;
        },
        { timeoutMs: 30_000, intervalMs: 200, explain: up.output },
      );
      expect(JSON.parse(snapshot.stdout)).toEqual(fixture('os_snapshot_ask_user.json'));

      const status = await runCliInProcess(['db', 'status'], { env });
      expect(status.code).toBe(0);
      expect(status.stdout).toMatch(new RegExp(`^embedded PostgreSQL in ${dataDir}: running\n  url: {4}postgres://postgres@127\\.0\\.0\\.1:\\d+/os_audit \\(password in ${dataDir}/password\\)\n  users: {2}pid ${up.child.pid} since \\S+: os-audit up\n$`));
      expect(status.stdout).not.toContain(readFileSync(path.join(dataDir, 'password'), 'utf8').trim());

      const stop = await runCliInProcess(['db', 'stop'], { env });
      expect(stop.code).toBe(1);
      expect(stop.stderr).toContain(`the embedded PostgreSQL in ${dataDir} is in use; stop these first, or use --force to stop it under them:\n  pid ${up.child.pid} since`);
      expect(serverRunning(dataDir)).toBe(true);

      up.child.kill('SIGKILL');
      await up.exited;
      expect(serverRunning(dataDir)).toBe(true);
      const orphaned = JSON.parse((await runCliInProcess(['db', 'status', '--json'], { env })).stdout) as { running: boolean; users: unknown[]; staleUsers: number };
      expect(orphaned).toMatchObject({ running: true, users: [], staleUsers: 1 });

      const events = await runCliInProcess(['events', 'spec-ask-user'], { env });
      expect(events.code, events.stderr).toBe(0);
      expect(events.stderr).toMatch(/using the PostgreSQL that an ended process left running on 127\.0\.0\.1:\d+; it stops when the last command using it ends/);
      expect(serverRunning(dataDir)).toBe(false);
      expect(registeredUsers(dataDir)).toEqual([]);
    } finally {
      up.child.kill('SIGKILL');
      await runCliInProcess(['db', 'stop', '--force'], { env });
    }
  }, 120_000);

  it('`db start` keeps the server running after every command until `db stop`; `db stop --force` stops it under a user', async () => {
    const dataDir = path.join(tempDir(), 'data');
    const env = { OS_AUDIT_DATA_DIR: dataDir };
    expect(await runCliInProcess(['db', 'status'], { env })).toMatchObject({ code: 0, stdout: `embedded PostgreSQL in ${dataDir}: not created yet\n` });
    try {
      const started = await runCliInProcess(['db', 'start'], { env });
      expect(started).toMatchObject({ code: 0, stdout: expect.stringMatching(/^the embedded PostgreSQL runs until `os-audit db stop`: postgres:\/\/postgres:[^@]+@127\.0\.0\.1:\d+\/os_audit\n$/) });
      expect(await runCliInProcess(['status'], { env })).toMatchObject({ code: 0 });
      expect(serverRunning(dataDir)).toBe(true);
      expect((await runCliInProcess(['db', 'status'], { env })).stdout).toMatch(/\n {2}users: {2}kept running by `os-audit db start` since \S+\n$/);

      const user = await startLocalPostgres({ dataDir, user: 'a test using the server' });
      const refused = await runCliInProcess(['db', 'stop'], { env });
      expect(refused).toMatchObject({ code: 1, stderr: expect.stringContaining(`  pid ${process.pid} since`) });
      expect(refused.stderr).toContain(': a test using the server\n');
      expect(await runCliInProcess(['db', 'stop', '--force'], { env })).toMatchObject({
        code: 0,
        stdout: `stopped the embedded PostgreSQL in ${dataDir} (under a command using it: pid ${process.pid})\n`,
      });
      expect(serverRunning(dataDir)).toBe(false);
      expect(registeredUsers(dataDir)).toEqual([]);
      await user.stop();
      expect(await runCliInProcess(['db', 'stop'], { env })).toMatchObject({ code: 0, stdout: `the embedded PostgreSQL in ${dataDir} is not running\n` });
    } finally {
      await runCliInProcess(['db', 'stop', '--force'], { env });
    }
  }, 60_000);
});

/** `os-audit up --import samples` as a process (what `npm start` runs), its output collected. */
function startUp(env: NodeJS.ProcessEnv) {
  return startCli(['up', '--import', 'samples'], env);
}

/** `os-audit ARGS` as a process, its output collected. */
function startCli(args: readonly string[], env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: root, env });
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

/** Runs `os-audit ARGS` as a process to its end. */
async function runCliProcess(args: readonly string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  const run = startCli(args, env);
  const code = await run.exited;
  return { code: code ?? -1, stdout: run.stdout(), stderr: run.stderr() };
}
