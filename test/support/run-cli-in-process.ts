import { PassThrough, Readable } from 'node:stream';
import { runCli } from '../../src/cli/run-cli.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `os-audit` in this process with captured output, as a user would from a shell. */
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
    env: options.env ?? {},
  });
  return { code, stdout: Buffer.concat(chunks.stdout).toString(), stderr: Buffer.concat(chunks.stderr).toString() };
}
