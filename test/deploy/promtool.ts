import { spawnSync } from 'node:child_process';
import { findCommand } from '../support/system-command.js';

const binary = findCommand('promtool');

/**
 * Whether the promtool tests run: with promtool installed (Debian's package `prometheus`), and
 * always under CI=true, where a missing promtool fails them (.ci/run installs it).
 */
export const promtoolTestsRun = binary !== undefined || process.env.CI === 'true';
if (!promtoolTestsRun) console.warn('test/deploy: the promtool tests are skipped, promtool is not installed (apt-get install prometheus; .ci/run installs it)');

export interface PromtoolRun {
  code: number | null;
  /** stdout and stderr together, for the failure message. */
  output: string;
}

/**
 * Runs promtool with `args` in `cwd` and waits for it.
 *
 * @example
 * ```ts
 * expect(runPromtool(['test', 'rules', 'os-audit-rules.test.yml'], 'deploy/prometheus').code).toBe(0);
 * ```
 */
export function runPromtool(args: string[], cwd?: string): PromtoolRun {
  if (binary === undefined) throw new Error('promtool is not installed: apt-get install prometheus (.ci/run installs it)');
  const run = spawnSync(binary, args, { cwd, encoding: 'utf8', timeout: 60_000 });
  if (run.error) throw run.error;
  return { code: run.status, output: `${run.stdout}${run.stderr}` };
}
