// fs.promises, read when used: loading node:fs/promises at every command's start costs a millisecond or two.
import { promises as fs } from 'node:fs';
import path from 'node:path';

/** The environment variable of the embedded server's idle time, in seconds. */
export const IDLE_SECONDS_ENV = 'OS_AUDIT_DB_IDLE_SECONDS';

/** How long the embedded server waits, by default, for the next command after its last user leaves. */
export const DEFAULT_IDLE_SECONDS = 30;

/** The server of a data directory, idle: no user since `since`; it stops at `stopsAt` (ISO 8601 both). */
export interface ServerIdle {
  since: string;
  stopsAt: string;
}

/**
 * The idle time `OS_AUDIT_DB_IDLE_SECONDS` sets, in milliseconds (0: the server stops when its
 * last user leaves), else {@link DEFAULT_IDLE_SECONDS}. Anything but a whole number of seconds
 * is an error that names the variable.
 *
 * @example
 * ```ts
 * idleMsFromEnv({ OS_AUDIT_DB_IDLE_SECONDS: '5' }); // 5000
 * ```
 */
export function idleMsFromEnv(env: NodeJS.ProcessEnv): number {
  const text = env[IDLE_SECONDS_ENV];
  if (text === undefined || text === '') return DEFAULT_IDLE_SECONDS * 1000;
  if (!/^\d+$/.test(text.trim())) throw new Error(`${IDLE_SECONDS_ENV}=${JSON.stringify(text)}: expected a whole number of seconds (0 stops the server as soon as its last command ends)`);
  return Number(text.trim()) * 1000;
}

/**
 * The idle mark of the server in `dataDir`, if it has one: written when its last user leaves (or
 * when the watchdog finds none left), removed when a command joins it or it stops.
 *
 * @example
 * ```ts
 * const idle = await readIdle('.os-audit'); // { since: '…', stopsAt: '…' } or undefined
 * ```
 */
export async function readIdle(dataDir: string): Promise<ServerIdle | undefined> {
  const text = await fs.readFile(idleFile(dataDir), 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  return text === undefined ? undefined : (JSON.parse(text) as ServerIdle);
}

/**
 * Marks the server in `dataDir` idle from `now` for `idleMs`.
 *
 * @example
 * ```ts
 * await markIdle('.os-audit', 30_000); // it stops in 30 s unless a command joins it
 * ```
 */
export async function markIdle(dataDir: string, idleMs: number, now = new Date()): Promise<ServerIdle> {
  const idle = { since: now.toISOString(), stopsAt: new Date(now.getTime() + idleMs).toISOString() };
  // Renamed into place whole: `os-audit db status` reads without the lock.
  await fs.writeFile(`${idleFile(dataDir)}.new`, `${JSON.stringify(idle)}\n`);
  await fs.rename(`${idleFile(dataDir)}.new`, idleFile(dataDir));
  return idle;
}

/**
 * Removes the idle mark of the server in `dataDir` (a command joined it, or it stopped).
 *
 * @example
 * ```ts
 * await clearIdle('.os-audit');
 * ```
 */
export async function clearIdle(dataDir: string): Promise<void> {
  await fs.rm(idleFile(dataDir), { force: true });
}

/**
 * How often the watchdog looks at an idle server: a quarter of the idle time, between 50 ms and 1 s.
 *
 * @example
 * ```ts
 * watchdogPollMs(30_000); // 1000
 * ```
 */
export function watchdogPollMs(idleMs: number): number {
  return Math.min(1000, Math.max(50, Math.round(idleMs / 4)));
}

function idleFile(dataDir: string): string {
  return path.join(dataDir, 'idle.json');
}
