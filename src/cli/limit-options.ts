import type { Command } from 'commander';
import { DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_SESSION_ID_BYTES, LIMIT_VARIABLES, type Limits, limitsFromEnv } from '../events/limits.js';
import { CliError } from './cli-context.js';
import { integerOption } from './parse-integer-option.js';

/**
 * Adds `--max-event-bytes` and `--max-session-id-bytes` to a command that reads events.
 *
 * @example
 * ```ts
 * withLimitOptions(program.command('append')).action((…, options) => resolveLimits(options, io.env));
 * ```
 */
export function withLimitOptions(command: Command): Command {
  return command
    .option('--max-event-bytes <bytes>', `bytes of one event's JSON (default: $${LIMIT_VARIABLES.maxEventBytes} or ${DEFAULT_MAX_EVENT_BYTES})`, integerOption(1))
    .option(
      '--max-session-id-bytes <bytes>',
      `bytes of a session id (default: $${LIMIT_VARIABLES.maxSessionIdBytes} or ${DEFAULT_MAX_SESSION_ID_BYTES})`,
      integerOption(1),
    );
}

/**
 * The limits of a command: its flags, else the environment's variables, else the defaults
 * (left undefined). A variable that is no whole number is a usage error.
 */
export function resolveLimits(flags: Limits, env: NodeJS.ProcessEnv): Limits {
  let fromEnv: Limits;
  try {
    fromEnv = limitsFromEnv(env);
  } catch (error) {
    if (error instanceof RangeError) throw new CliError(error.message, 2);
    throw error;
  }
  return { maxEventBytes: flags.maxEventBytes ?? fromEnv.maxEventBytes, maxSessionIdBytes: flags.maxSessionIdBytes ?? fromEnv.maxSessionIdBytes };
}
