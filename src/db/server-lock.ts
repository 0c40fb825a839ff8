import { randomBytes } from 'node:crypto';
import { link, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ProcessIdentity, currentProcess, isRunning } from './process-identity.js';

/** How long to wait for another command's turn: creating a cluster and starting take seconds. */
const DEFAULT_TIMEOUT_MS = 180_000;
/** A breaker holds `server.lock.breaking` for milliseconds; one this old died while breaking. */
const ABANDONED_BREAK_MS = 10_000;

/** The holder of a data directory's lock, as its lock file says. */
interface Holder extends ProcessIdentity {
  /** Tells apart two holders in one process. */
  token: string;
}

/**
 * Runs `work` while this call alone holds the lock of the server in `dataDir` (an existing
 * folder), so that starting, joining, leaving and stopping the server are decided one at a time
 * across processes. A lock whose holder died (`kill -9`) is broken by the next caller.
 *
 * @example
 * ```ts
 * await withServerLock('.os-audit', async () => {
 *   if ((await readUsers('.os-audit')).live.length === 0) await stopServer();
 * });
 * ```
 */
export async function withServerLock<T>(dataDir: string, work: () => Promise<T>, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<T> {
  const lock = path.join(dataDir, 'server.lock');
  const holder = await acquire(dataDir, lock, timeoutMs);
  try {
    return await work();
  } finally {
    if ((await readHolder(lock))?.token === holder.token) await rm(lock, { force: true });
  }
}

async function acquire(dataDir: string, lock: string, timeoutMs: number): Promise<Holder> {
  const me: Holder = { ...(await currentProcess()), token: randomBytes(8).toString('hex') };
  // Written whole first, then linked into place: the lock file is never seen half written.
  const draft = path.join(dataDir, `server.lock.${me.pid}-${me.token}`);
  await writeFile(draft, JSON.stringify(me));
  try {
    const deadline = Date.now() + timeoutMs;
    for (let pause = 10; ; pause = Math.min(pause * 2, 100)) {
      try {
        await link(draft, lock);
        return me;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const holder = await readHolder(lock);
      if (holder && !(await isRunning(holder))) {
        await breakStaleLock(dataDir, lock, holder);
        continue;
      }
      if (Date.now() > deadline) throw new Error(`waited ${timeoutMs / 1000} s for ${lock}, held by pid ${holder?.pid} (another os-audit command starting or stopping the server)`);
      await sleep(pause);
    }
  } finally {
    await rm(draft, { force: true });
  }
}

/**
 * Removes the lock of a dead holder. Breakers take turns (`server.lock.breaking`) and look again
 * before removing, so that none removes the lock a live process took after the dead one's.
 */
async function breakStaleLock(dataDir: string, lock: string, stale: Holder): Promise<void> {
  const breaking = path.join(dataDir, 'server.lock.breaking');
  try {
    await writeFile(breaking, '', { flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const since = await stat(breaking).then((s) => s.mtimeMs, () => Date.now());
    if (Date.now() - since > ABANDONED_BREAK_MS) await rm(breaking, { force: true });
    return;
  }
  try {
    if ((await readHolder(lock))?.token === stale.token) await rm(lock, { force: true });
  } finally {
    await rm(breaking, { force: true });
  }
}

async function readHolder(lock: string): Promise<Holder | undefined> {
  let text: string;
  try {
    text = await readFile(lock, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    return JSON.parse(text) as Holder;
  } catch {
    throw new Error(`${lock} is not a lock os-audit wrote (${JSON.stringify(text.slice(0, 80))}): remove it if no os-audit command runs on this data directory`);
  }
}
