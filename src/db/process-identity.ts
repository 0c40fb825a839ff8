import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * A process, named so that a later process given the same pid is not mistaken for it: its pid
 * and its start time as the system reports it (an opaque text, compared for equality only).
 */
export interface ProcessIdentity {
  pid: number;
  started: string;
}

/**
 * This process's identity, to be written where other processes check whether it still runs.
 *
 * @example
 * ```ts
 * const me = await currentProcess(); // { pid: 4242, started: '81234567' }
 * ```
 */
export async function currentProcess(): Promise<ProcessIdentity> {
  const started = await startTime(process.pid);
  if (started === undefined) throw new Error(`cannot read the start time of this process (pid ${process.pid})`);
  return { pid: process.pid, started };
}

/**
 * True while the process still runs: its pid exists, is not a zombie, and started when it did
 * (a pid reused by a newer process is not it).
 *
 * @example
 * ```ts
 * if (!(await isRunning(holder))) await removeStaleEntry();
 * ```
 */
export async function isRunning(identity: ProcessIdentity): Promise<boolean> {
  return (await startTime(identity.pid)) === identity.started;
}

/** Linux's /proc; elsewhere (macOS) `ps` answers. */
const hasProc = existsSync('/proc/self/stat');

/** The start time of a live pid, else undefined. */
async function startTime(pid: number): Promise<string | undefined> {
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  if (!hasProc) return psStartTime(pid);
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (stat === undefined) return undefined;
  // pid (comm) state … : comm may hold spaces and parentheses, the fields after its last ')' do not.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const [state] = fields;
  if (state === 'Z' || state === 'X') return undefined; // ended, not yet reaped
  return fields[19]; // field 22: start time, in clock ticks after boot
}

async function psStartTime(pid: number): Promise<string | undefined> {
  try {
    const { stdout } = await run('ps', ['-o', 'lstart=', '-p', String(pid)]);
    return stdout.trim() || undefined;
  } catch {
    return undefined; // ps exits 1 for a pid that does not exist
  }
}
