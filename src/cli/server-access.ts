// fs.promises, read when used: a dynamic import of a node: module has no loader in the bundled CLI.
import { promises as fs } from 'node:fs';
import type { Command } from 'commander';
import type { HttpAccess } from '../observability/http-access.js';
import { CliError } from './cli-context.js';

/** The variables of `--allowed-host` (comma-separated) and of the token `--auth-token-file` holds. */
export const ALLOWED_HOSTS_ENV = 'OS_AUDIT_ALLOWED_HOSTS';
export const AUTH_TOKEN_ENV = 'OS_AUDIT_AUTH_TOKEN';

/** What commander parsed of the flags {@link withServerAccessOptions} adds. */
export interface ServerAccessFlags {
  allowedHost?: string[];
  authTokenFile?: string;
  insecureNoAuth?: boolean;
}

/**
 * Adds the flags that say who the console's server answers: `--allowed-host` (repeatable),
 * `--auth-token-file` and `--insecure-no-auth`. `console`, `project` and `up` share them.
 *
 * @example
 * ```ts
 * withServerAccessOptions(program.command('console')).action(async (flags: ServerAccessFlags) => resolveServerAccess(flags, process.env, '0.0.0.0'));
 * ```
 */
export function withServerAccessOptions(command: Command): Command {
  return command
    .option(
      '--allowed-host <name>',
      `a Host name the server answers besides localhost, 127.0.0.1, [::1] and its own address; repeatable, comma-separated in the variable (env ${ALLOWED_HOSTS_ENV}; default none)`,
      (name: string, previous: string[] = []) => [...previous, name],
    )
    .option(
      '--auth-token-file <file>',
      `a file holding the token the console asks for, as a bearer token or the password of any user; needed to listen beyond loopback; the variable holds the token itself (env ${AUTH_TOKEN_ENV}; default none)`,
    )
    .option('--insecure-no-auth', 'listen beyond loopback without a token: whoever reaches the port reads the console');
}

/**
 * The Host names and token of a server about to listen on `host`: a flag wins over its variable.
 * Throws a usage error (exit code 2) for a non-loopback `host` without a token, unless
 * `--insecure-no-auth` says so is meant, and for an empty token.
 *
 * @example
 * ```ts
 * await resolveServerAccess({ allowedHost: ['audit.internal'] }, { OS_AUDIT_AUTH_TOKEN: 's3cret' }, '0.0.0.0');
 * // { allowedHosts: ['audit.internal'], authToken: 's3cret' }
 * ```
 */
export async function resolveServerAccess(flags: ServerAccessFlags, env: NodeJS.ProcessEnv, host: string): Promise<HttpAccess> {
  const allowedHosts = flags.allowedHost ?? (env[ALLOWED_HOSTS_ENV] ?? '').split(',').map((name) => name.trim()).filter((name) => name !== '');
  const [authToken, from] =
    flags.authTokenFile === undefined ? [env[AUTH_TOKEN_ENV]?.trim() || undefined, AUTH_TOKEN_ENV] : [(await fs.readFile(flags.authTokenFile, 'utf8')).trim(), flags.authTokenFile];
  if (authToken === '') throw new CliError(`the token file ${from} is empty: write the token into it`, 2);
  // Loaded here, not with the command line, as the commands' modules are: `os-audit --help` stays light.
  const { isLoopbackAddress } = await import('../observability/http-access.js');
  if (authToken === undefined && !flags.insecureNoAuth && !isLoopbackAddress(host)) {
    throw new CliError(`refusing to serve the console on ${host} without a token: give one (--auth-token-file FILE or ${AUTH_TOKEN_ENV}), or pass --insecure-no-auth to serve it to anyone`, 2);
  }
  return { allowedHosts, authToken };
}
