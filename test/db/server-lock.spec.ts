import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { type ProcessIdentity, currentProcess, isRunning } from '../../src/db/process-identity.js';
import { withServerLock } from '../../src/db/server-lock.js';
import { useTempDir } from '../support/log-files.js';

const tempDir = useTempDir('os-audit-lock-');

const root = fileURLToPath(new URL('../..', import.meta.url));

/** The identity of a process (as it read it itself), once it was killed. */
async function killedProcess(): Promise<ProcessIdentity> {
  const script = "const { currentProcess } = await import('./src/db/process-identity.ts'); console.log(JSON.stringify(await currentProcess())); setInterval(() => {}, 1000);";
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: root });
  const [line] = (await once(child.stdout, 'data')) as [Buffer];
  const identity = JSON.parse(line.toString()) as ProcessIdentity;
  expect(await isRunning(identity)).toBe(true);
  child.kill('SIGKILL');
  await once(child, 'exit');
  return identity;
}

describe('the lock of a data directory', () => {
  it('lets one holder in at a time, also within one process', async () => {
    const dir = tempDir();
    let inside = 0;
    let most = 0;
    const order: number[] = [];
    await Promise.all(
      [1, 2, 3, 4, 5].map((n) =>
        withServerLock(dir, async () => {
          inside += 1;
          most = Math.max(most, inside);
          await sleep(20);
          order.push(n);
          inside -= 1;
        }),
      ),
    );
    expect(most).toBe(1);
    expect(order.sort()).toEqual([1, 2, 3, 4, 5]);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('breaks the lock of a killed holder, and of a pid now used by another process', async () => {
    const dir = tempDir();
    const lock = path.join(dir, 'server.lock');
    const dead = await killedProcess();
    expect(await isRunning(dead)).toBe(false);
    writeFileSync(lock, JSON.stringify({ ...dead, token: 'dead' }));
    expect(await withServerLock(dir, async () => 'got it', 2_000)).toBe('got it');

    const reused = { pid: process.pid, started: 'another start time', token: 'reused' };
    expect(await isRunning(reused)).toBe(false);
    writeFileSync(lock, JSON.stringify(reused));
    expect(await withServerLock(dir, async () => 'got it again', 2_000)).toBe('got it again');
    expect(existsSync(lock)).toBe(false);
  });

  it('gets past a breaker that died while breaking a stale lock', async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'server.lock'), JSON.stringify({ pid: process.pid, started: 'long ago', token: 'stale' }));
    const breaking = path.join(dir, 'server.lock.breaking');
    writeFileSync(breaking, '');
    const minuteAgo = new Date(Date.now() - 60_000);
    utimesSync(breaking, minuteAgo, minuteAgo);
    expect(await withServerLock(dir, async () => 'got it', 2_000)).toBe('got it');
    expect(readdirSync(dir)).toEqual([]);
  });

  it('waits for a live holder and says who holds it when it gives up', async () => {
    const dir = tempDir();
    const lock = path.join(dir, 'server.lock');
    writeFileSync(lock, JSON.stringify({ ...(await currentProcess()), token: 'a live holder' }));
    await expect(withServerLock(dir, async () => 'never', 300)).rejects.toThrow(`waited 0.3 s for ${lock}, held by pid ${process.pid}`);
  });
});
