import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The repository, where child processes run. */
export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
/** The CLI's entry point in the sources, run with tsx. */
export const cliEntry = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

/** How a CLI process ended, and what it wrote. */
export interface CliProcessResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** An `os-audit` command running as a child process. */
export interface CliProcess {
  readonly child: ChildProcess;
  /** Resolves when the process has exited (never rejects). */
  readonly result: Promise<CliProcessResult>;
}

/**
 * `DATABASE_URL` with `application_name` set, so that `pg_stat_activity` names a process's
 * connections (the URL's parameter wins over the name the CLI gives its pool).
 *
 * @example
 * ```ts
 * namedUrl('postgres://postgres@127.0.0.1:5432/db', 'fault-import'); // '...?application_name=fault-import'
 * ```
 */
export function namedUrl(databaseUrl: string, applicationName: string): string {
  const url = new URL(databaseUrl);
  url.searchParams.set('application_name', applicationName);
  return url.toString();
}

/**
 * Runs `os-audit ...args` from the sources (tsx) as a real process against `databaseUrl`, its
 * connections named `applicationName`: a process a test can SIGKILL in the middle of its work.
 *
 * @example
 * ```ts
 * const { code, stdout } = await startCli(['verify', '--all'], { databaseUrl }).result;
 * ```
 */
export function startCli(args: readonly string[], options: { databaseUrl: string; applicationName?: string }): CliProcess {
  const databaseUrl = namedUrl(options.databaseUrl, options.applicationName ?? 'os-audit-cli');
  const child = spawn(process.execPath, ['--import', 'tsx', cliEntry, ...args], {
    cwd: repoRoot,
    env: { ...process.env, DATABASE_URL: databaseUrl, OS_AUDIT_LOG_FORMAT: 'json' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const result = new Promise<CliProcessResult>((resolve) => {
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
    child.once('error', (error) => resolve({ code: null, signal: null, stdout, stderr: `${stderr}${error.message}` }));
  });
  return { child, result };
}
