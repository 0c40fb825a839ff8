import { PassThrough, Readable } from 'node:stream';
import { runCli } from '../../src/cli/run-cli.js';
import { IDLE_SECONDS_ENV } from '../../src/db/server-idle.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `os-audit` in this process with captured output, as a user would from a shell. An
 * embedded server stops when its last command ends (idle time 0) unless `env` says otherwise,
 * so that no test leaves one behind.
 */
export async function runCliInProcess(args: readonly string[], options: { env?: NodeJS.ProcessEnv; stdin?: string | Buffer } = {}): Promise<CliRun> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const chunks = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
  stdout.on('data', (chunk: Buffer) => chunks.stdout.push(chunk));
  stderr.on('data', (chunk: Buffer) => chunks.stderr.push(chunk));
  const code = await runCli(args, {
    stdin: Readable.from([options.stdin ?? '']),
    stdout,
    stderr,
    env: { [IDLE_SECONDS_ENV]: '0', ...options.env },
  });
  return { code, stdout: Buffer.concat(chunks.stdout).toString(), stderr: Buffer.concat(chunks.stderr).toString() };
}
