import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTempDir } from '../support/log-files.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';

// `db status` reads the server's postmaster.pid while a command starts or stops the server: each
// state it can catch is written here as PostgreSQL writes it, with a live process for its pid.
const tempFolder = useTempDir('os-audit-db-status-');

let alive: ChildProcess;
let endedPid: number;
beforeAll(async () => {
  alive = spawn('sleep', ['600'], { stdio: 'ignore' });
  const ended = spawn('true', { stdio: 'ignore' });
  await new Promise((resolve) => ended.once('exit', resolve));
  endedPid = ended.pid!;
});
afterAll(() => {
  alive.kill();
});

/** A data directory whose cluster exists and whose postmaster.pid holds these lines. */
function dataDirWithPostmasterPid(lines: readonly string[] | undefined): string {
  const dataDir = path.join(tempFolder(), 'data');
  mkdirSync(path.join(dataDir, 'pgdata'), { recursive: true });
  writeFileSync(path.join(dataDir, 'pgdata', 'PG_VERSION'), '17\n');
  if (lines) writeFileSync(path.join(dataDir, 'pgdata', 'postmaster.pid'), `${lines.join('\n')}\n`);
  return dataDir;
}

/** postmaster.pid as a postmaster writes it on `port`, with its status line when it has one. */
function postmasterLines(pid: number, port: number, status?: string): string[] {
  const lines = [String(pid), '/data/pgdata', '1765000000', String(port), '', '127.0.0.1', '  5432001    32769'];
  return status === undefined ? lines : [...lines, status];
}

async function status(dataDir: string): Promise<{ json: Record<string, unknown>; text: string }> {
  const env = { OS_AUDIT_DATA_DIR: dataDir };
  const json = await runCliInProcess(['db', 'status', '--json'], { env });
  const text = await runCliInProcess(['db', 'status'], { env });
  expect(json).toMatchObject({ code: 0, stderr: '' });
  expect(text).toMatchObject({ code: 0, stderr: '' });
  return { json: JSON.parse(json.stdout) as Record<string, unknown>, text: text.stdout };
}

describe('os-audit db status, while the embedded server starts or stops', () => {
  it('says starting while initdb creates the cluster, without the default port its single-user backend writes', async () => {
    // initdb's backend writes its pid negated and the default port, 5432: the machine's own server's.
    const dataDir = dataDirWithPostmasterPid([String(-alive.pid!), '/data/pgdata', '1765000000', '5432', '']);
    const { json, text } = await status(dataDir);
    expect(json).toMatchObject({ created: true, state: 'starting', running: false });
    expect(json).not.toHaveProperty('port');
    expect(json).not.toHaveProperty('url');
    expect(text).toBe(`embedded PostgreSQL in ${dataDir}: starting (its port is not known yet)\n`);
  });

  it('says starting, with its port, while the postmaster is not ready yet', async () => {
    const dataDir = dataDirWithPostmasterPid(postmasterLines(alive.pid!, 54_999));
    const { json, text } = await status(dataDir);
    expect(json).toMatchObject({ state: 'starting', running: false, port: 54_999 });
    expect(json).not.toHaveProperty('url');
    expect(text).toBe(`embedded PostgreSQL in ${dataDir}: starting on 127.0.0.1:54999\n`);

    writeFileSync(path.join(dataDir, 'pgdata', 'postmaster.pid'), `${postmasterLines(alive.pid!, 54_999, 'starting').join('\n')}\n`);
    expect((await status(dataDir)).json).toMatchObject({ state: 'starting', port: 54_999 });
  });

  it('says starting when it reads postmaster.pid as the postmaster creates it, still empty', async () => {
    const dataDir = dataDirWithPostmasterPid(['']);
    const { json } = await status(dataDir);
    expect(json).toMatchObject({ state: 'starting', running: false });
    expect(json).not.toHaveProperty('port');
  });

  it('gives the URL once the postmaster is ready, and says stopping while it stops', async () => {
    const dataDir = dataDirWithPostmasterPid(postmasterLines(alive.pid!, 54_998, 'ready   '));
    const running = await status(dataDir);
    expect(running.json).toMatchObject({ state: 'running', running: true, port: 54_998, url: 'postgres://postgres@127.0.0.1:54998/os_audit' });
    expect(running.text).toMatch(/: running\n {2}url: {4}postgres:\/\/postgres@127\.0\.0\.1:54998\/os_audit /);

    writeFileSync(path.join(dataDir, 'pgdata', 'postmaster.pid'), `${postmasterLines(alive.pid!, 54_998, 'stopping').join('\n')}\n`);
    const stopping = await status(dataDir);
    expect(stopping.json).toMatchObject({ state: 'stopping', running: false, port: 54_998 });
    expect(stopping.json).not.toHaveProperty('url');
    expect(stopping.text).toBe(`embedded PostgreSQL in ${dataDir}: stopping on 127.0.0.1:54998\n`);
  });

  it('says not running when postmaster.pid is gone, or its process ended', async () => {
    expect((await status(dataDirWithPostmasterPid(undefined))).json).toMatchObject({ state: 'not running', running: false });
    const left = await status(dataDirWithPostmasterPid(postmasterLines(endedPid, 54_997, 'ready   ')));
    expect(left.json).toMatchObject({ state: 'not running', running: false });
    expect(left.json).not.toHaveProperty('port');
  });
});
