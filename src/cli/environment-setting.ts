import { InvalidArgumentError } from 'commander';
import { CliError } from './cli-error.js';

/**
 * A setting's environment variable, parsed as its flag is: undefined when it is unset or empty,
 * a usage error (exit code 2) naming the variable when `parse` refuses it.
 *
 * @example
 * ```ts
 * environmentSetting(process.env, 'OS_AUDIT_METRICS_PORT', parseMetricsPort); // 9464, 'off', undefined, or throws
 * ```
 */
export function environmentSetting<T>(env: NodeJS.ProcessEnv, name: string, parse: (text: string) => T): T | undefined {
  const text = env[name];
  if (text === undefined || text === '') return undefined;
  try {
    return parse(text);
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw new CliError(`invalid ${name}=${JSON.stringify(text)}: ${error.message}`, 2);
    throw error;
  }
}
