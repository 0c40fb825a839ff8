import { execFile, spawn } from 'node:child_process';
import { chmodSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { IDLE_SECONDS_ENV } from '../../src/db/server-idle.js';
import { pollUntil } from '../support/daemon-process.js';
import { useTempDir } from '../support/log-files.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
/** The package's bin, as `npm run build` builds it: these tests run the CLI as users do. */
const bin = path.join(root, (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin['os-audit']!);
const tempFolder = useTempDir('os-audit-idle-');

/** A data directory the server's account can enter when the tests run as root. */
function newDataDir(): string {
  const dir = tempFolder();
  chmodSync(dir, 0o755);
  return path.join(dir, 'data');
}

/** The environment of a command on the embedded server of `dataDir` with this idle time. */
function embeddedEnv(dataDir: string, idleSeconds: number): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, OS_AUDIT_DATA_DIR: dataDir, [IDLE_SECONDS_ENV]: String(idleSeconds), OS_AUDIT_METRICS_PORT: '0' };
  delete env.DATABASE_URL;
  return env;
}

/** The running postmaster's pid and start time (postmaster.pid lines 1 and 3), or undefined. */
function postmaster(dataDir: string): string | undefined {
  const file = path.join(dataDir, 'pgdata', 'postmaster.pid');
  if (!existsSync(file)) return undefined;
  const lines = readFileSync(file, 'utf8').split('\n');
  return `pid ${lines[0]}, started ${lines[2]}`;
}

interface DbStatus {
  running: boolean;
  users: unknown[];
  idle?: { since: string; stopsAt: string };
}

async function dbStatus(dataDir: string): Promise<DbStatus> {
  const status = await runCliInProcess(['db', 'status', '--json'], { env: { OS_AUDIT_DATA_DIR: dataDir } });
  // Its error, rather than JSON.parse's of empty output.
  if (status.code !== 0) throw new Error(`os-audit db status --json exited ${status.code}: ${status.stderr}`);
  return JSON.parse(status.stdout) as DbStatus;
}

const dataDirs: string[] = [];
afterEach(async () => {
  // No server outlives its test, idle or not (the watchdog then ends too).
  for (const dataDir of dataDirs.splice(0)) await runCliInProcess(['db', 'stop', '--force'], { env: { OS_AUDIT_DATA_DIR: dataDir } });
});

describe('the embedded server started for a command', () => {
  it('stays up for the idle time, so that a burst of commands starts it once; then it stops', async () => {
    if (!existsSync(bin)) throw new Error(`${bin} is missing: run npm run build`);
    const dataDir = newDataDir();
    dataDirs.push(dataDir);
    // Long enough for the next command to join it on a loaded machine.
    const env = embeddedEnv(dataDir, 10);

    const first = await run(process.execPath, [bin, 'status'], { env });
    expect(first.stderr).toMatch(/starting PostgreSQL/);
    const started = postmaster(dataDir);
    expect(started).toBeDefined();
    const idle = await dbStatus(dataDir);
    expect(idle).toMatchObject({ running: true, users: [] });
    expect(Date.parse(idle.idle!.stopsAt) - Date.parse(idle.idle!.since)).toBe(10_000);
    const described = (await runCliInProcess(['db', 'status'], { env: { OS_AUDIT_DATA_DIR: dataDir } })).stdout;
    expect(described).toContain(`  idle:   since ${idle.idle!.since}; stops at ${idle.idle!.stopsAt} unless a command uses it`);

    const second = await run(process.execPath, [bin, 'status'], { env });
    expect(second.stderr).not.toMatch(/starting PostgreSQL/);
    expect(postmaster(dataDir)).toBe(started);

    // The watchdog removes postmaster.pid (pg_ctl stop) and then its idle mark, both under the server's lock.
    await pollUntil('the idle server to stop', async () => postmaster(dataDir) === undefined && !existsSync(path.join(dataDir, 'idle.json')), { timeoutMs: 60_000, intervalMs: 200 });
    const stopped = await dbStatus(dataDir);
    expect(stopped).toMatchObject({ running: false });
    expect(stopped.idle).toBeUndefined();
  }, 180_000);

  it('stops after the idle time when its last command was killed', async () => {
    const dataDir = newDataDir();
    dataDirs.push(dataDir);
    const daemon = spawn(process.execPath, [bin, 'project', '--poll-interval', '100'], { env: embeddedEnv(dataDir, 1), stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    daemon.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise((resolve) => daemon.once('exit', resolve));
    try {
      // Creating and starting the server takes a few seconds alone, and far more on a loaded machine.
      await pollUntil('the daemon to use the server', async () => (await dbStatus(dataDir)).users.length === 1, {
        timeoutMs: 120_000,
        intervalMs: 200,
        explain: async () => `db status: ${JSON.stringify(await dbStatus(dataDir))}; the daemon's stderr: ${stderr}`,
      });
    } finally {
      daemon.kill('SIGKILL');
      await exited;
    }
    expect(postmaster(dataDir)).toBeDefined();
    await pollUntil('the server of the killed command to stop', async () => postmaster(dataDir) === undefined, { timeoutMs: 60_000, intervalMs: 200 });
  }, 240_000);

  it('stops at once on `os-audit db stop`, idle or not', async () => {
    const dataDir = newDataDir();
    dataDirs.push(dataDir);
    await run(process.execPath, [bin, 'status'], { env: embeddedEnv(dataDir, 600) });
    expect((await dbStatus(dataDir)).idle).toBeDefined();
    const stop = await runCliInProcess(['db', 'stop'], { env: { OS_AUDIT_DATA_DIR: dataDir } });
    expect(stop).toMatchObject({ code: 0, stdout: `stopped the embedded PostgreSQL in ${dataDir}\n` });
    expect(postmaster(dataDir)).toBeUndefined();
    await pollUntil('the watchdog to end', async () => !existsSync(path.join(dataDir, 'watchdog.json')), { timeoutMs: 10_000, intervalMs: 100 });
  }, 60_000);

  it('refuses an idle time that is not a whole number of seconds', async () => {
    const dataDir = newDataDir();
    const result = await runCliInProcess(['status'], { env: { OS_AUDIT_DATA_DIR: dataDir, [IDLE_SECONDS_ENV]: '1m' } });
    expect(result).toMatchObject({ code: 1, stderr: `os-audit: ${IDLE_SECONDS_ENV}="1m": expected a whole number of seconds (0 stops the server as soon as its last command ends)\n` });
  });
});
