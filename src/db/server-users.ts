import { randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { type ProcessIdentity, isRunning } from './process-identity.js';

/** One user of the server in a data directory: a file in `users/`. */
export interface ServerUser {
  /** The user's file, which leaving removes. */
  file: string;
  /** What uses it, e.g. `os-audit up --import samples`. */
  command: string;
  /** When it began using the server (ISO 8601). */
  since: string;
  /** The process using it; absent for the server kept running by `os-audit db start`. */
  process?: ProcessIdentity;
}

/** The users of the server in a data directory, sorted by whether their process still runs. */
export interface ServerUsers {
  live: ServerUser[];
  /** Left behind by processes that ended without leaving (`kill -9`, a crash). */
  stale: ServerUser[];
}

/**
 * Registers `process` as a user of the server in `dataDir`; removing the returned file leaves.
 *
 * @example
 * ```ts
 * const file = await addUser('.os-audit', 'os-audit snapshot s1', await currentProcess());
 * ```
 */
export async function addUser(dataDir: string, command: string, process?: ProcessIdentity): Promise<string> {
  const folder = path.join(dataDir, 'users');
  await mkdir(folder, { recursive: true });
  // One process may use the server several times at once (tests run commands in-process).
  const file = path.join(folder, process ? `${process.pid}-${randomBytes(4).toString('hex')}.json` : 'kept.json');
  const user: Omit<ServerUser, 'file'> = { command, since: new Date().toISOString(), ...(process ? { process } : {}) };
  // Renamed into place whole: `os-audit db status` reads without the lock.
  await writeFile(`${file}.new`, `${JSON.stringify(user)}\n`);
  await rename(`${file}.new`, file);
  return file;
}

/**
 * The users registered in `dataDir`: a user whose process no longer runs, or whose pid now names
 * another process, is stale.
 *
 * @example
 * ```ts
 * const { live, stale } = await readUsers('.os-audit');
 * await removeUsers(stale);
 * ```
 */
export async function readUsers(dataDir: string): Promise<ServerUsers> {
  const folder = path.join(dataDir, 'users');
  const names = await readdir(folder).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [];
    throw error;
  });
  const users = await Promise.all(
    names
      .filter((name) => name.endsWith('.json'))
      .map(async (name): Promise<ServerUser | undefined> => {
        const file = path.join(folder, name);
        // A user leaving while we read is gone, not an error.
        const text = await readFile(file, 'utf8').catch(() => undefined);
        return text === undefined ? undefined : { ...parseUser(text, file), file };
      }),
  );
  const result: ServerUsers = { live: [], stale: [] };
  for (const user of users) {
    if (user === undefined) continue;
    const live = user.process === undefined || (await isRunning(user.process));
    result[live ? 'live' : 'stale'].push(user);
  }
  result.live.sort((a, b) => a.since.localeCompare(b.since));
  return result;
}

/**
 * Removes these users' files (those already gone included).
 *
 * @example
 * ```ts
 * await removeUsers((await readUsers('.os-audit')).stale);
 * ```
 */
export async function removeUsers(users: readonly ServerUser[]): Promise<void> {
  await Promise.all(users.map((user) => rm(user.file, { force: true })));
}

function parseUser(text: string, file: string): Omit<ServerUser, 'file'> {
  try {
    return JSON.parse(text) as Omit<ServerUser, 'file'>;
  } catch {
    throw new Error(`${file} is not a user entry os-audit wrote (${JSON.stringify(text.slice(0, 80))}): remove it`);
  }
}
