import type { Command } from 'commander';
import type { LocalPostgresStatus } from '../../db/local-postgres.js';
import { IDLE_SECONDS_ENV } from '../../db/server-idle.js';
import type { ServerUser } from '../../db/server-users.js';
import { type CliIo, CliError, write } from '../cli-context.js';
import { embeddedDataDir, openEmbeddedDatabase } from '../embedded-database.js';

/** The server's code, loaded by the subcommand that runs (kysely and pg are most of a command's start). */
const localPostgres = () => import('../../db/local-postgres.js');

/**
 * `os-audit db status|start|stop`: the embedded PostgreSQL of the data directory, whatever
 * `DATABASE_URL` says (`runCli` starts no server for these).
 */
export function registerDbCommand(program: Command, io: CliIo): void {
  const db = program.command('db').description('the embedded PostgreSQL of --data-dir: status, start (keep it running), stop');
  const dataDir = (command: Command) => embeddedDataDir(command.optsWithGlobals(), io.env);

  db.command('status')
    .description('whether the embedded PostgreSQL runs (or is starting or stopping), its URL (without the password), data directory and users')
    .option('--json', 'print the status as JSON')
    .action(async (options: { json?: boolean }, command: Command) => {
      const { localPostgresStatus } = await localPostgres();
      const status = await localPostgresStatus(dataDir(command));
      await write(io.stdout, options.json ? `${JSON.stringify(status, null, 2)}\n` : describeStatus(status));
    });

  db.command('start')
    .description('start the embedded PostgreSQL (migrated) and keep it running after every command, until `os-audit db stop`')
    .action(async (_options, command: Command) => {
      const server = await openEmbeddedDatabase(io, dataDir(command), 'os-audit db start');
      try {
        await (await localPostgres()).keepLocalPostgresRunning(dataDir(command));
      } finally {
        await server.stop();
      }
      // The generated password is for this machine, as `up` prints it.
      await write(io.stdout, `the embedded PostgreSQL runs until \`os-audit db stop\`: ${server.url}\n`);
    });

  db.command('stop')
    .description('stop the embedded PostgreSQL; refused while another command (such as `up`) uses it, unless --force')
    .option('--force', 'stop it even under the commands that use it (their connections end)')
    .action(async (options: { force?: boolean }, command: Command) => {
      const { stopLocalPostgres } = await localPostgres();
      const { outcome, users } = await stopLocalPostgres(dataDir(command), options);
      const where = `the embedded PostgreSQL in ${dataDir(command)}`;
      if (outcome === 'refused') {
        throw new CliError(`${where} is in use; stop these first, or use --force to stop it under them:\n${users.map((user) => `  ${describeUser(user)}\n`).join('')}`.trimEnd());
      }
      const under = users.length > 0 ? ` (under ${users.length === 1 ? 'a command' : `${users.length} commands`} using it: ${users.map((user) => `pid ${user.process?.pid}`).join(', ')})` : '';
      await write(io.stdout, outcome === 'stopped' ? `stopped ${where}${under}\n` : `${where} is not running\n`);
    });
}

function describeStatus(status: LocalPostgresStatus): string {
  const lines = [`embedded PostgreSQL in ${status.dataDir}: ${describeState(status)}`];
  if (status.url) lines.push(`  url:    ${status.url} (password in ${status.passwordFile})`);
  const users = status.users.map(describeUser);
  if (status.running && users.length === 0 && !status.idle) users.push('none: left running by a command that ended without stopping it; the next command stops it when done, or `os-audit db stop`');
  users.forEach((user, i) => lines.push(`  ${i === 0 ? 'users: ' : '       '} ${user}`));
  if (status.idle) lines.push(`  idle:   since ${status.idle.since}; stops at ${status.idle.stopsAt} unless a command uses it (${IDLE_SECONDS_ENV}; \`os-audit db stop\` stops it now)`);
  if (status.staleUsers > 0) lines.push(`  stale:  ${status.staleUsers === 1 ? '1 user whose process' : `${status.staleUsers} users whose processes`} ended (the next command removes them)`);
  return `${lines.join('\n')}\n`;
}

function describeState({ state, port }: LocalPostgresStatus): string {
  if (state === 'not created') return 'not created yet';
  if (state === 'starting') return port === undefined ? 'starting (its port is not known yet)' : `starting on 127.0.0.1:${port}`;
  if (state === 'stopping') return port === undefined ? 'stopping' : `stopping on 127.0.0.1:${port}`;
  return state;
}

function describeUser(user: ServerUser): string {
  return user.process ? `pid ${user.process.pid} since ${user.since}: ${user.command}` : `kept running by \`${user.command}\` since ${user.since}`;
}
