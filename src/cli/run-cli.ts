import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import type { LocalPostgres } from '../db/local-postgres.js';
import { type CliIo, CliError } from './cli-context.js';
import { registerAppendCommand } from './commands/append-command.js';
import { registerConsoleCommand } from './commands/console-command.js';
import { registerDbCommand } from './commands/db-command.js';
import { registerDigestCommand } from './commands/digest-command.js';
import { registerEventsCommand } from './commands/events-command.js';
import { registerImportCommand } from './commands/import-command.js';
import { registerMigrateCommand } from './commands/migrate-command.js';
import { registerProjectCommand } from './commands/project-command.js';
import { registerRebuildCommand } from './commands/rebuild-command.js';
import { registerSnapshotCommand } from './commands/snapshot-command.js';
import { registerStatusCommand } from './commands/status-command.js';
import { registerUpCommand } from './commands/up-command.js';
import { registerSealCommand } from './commands/seal-command.js';
import { registerVerifyCommand } from './commands/verify-command.js';
import { PROJECTIONS_ENV } from './projection-options.js';
import { DEFAULT_DATA_DIR, embeddedDataDir, openEmbeddedDatabase } from './embedded-database.js';
import { checkDatabaseUrl, describeFailure, type FailureContext } from './describe-failure.js';

const { version } = JSON.parse(readFileSync(new URL(packageJsonPath(), import.meta.url), 'utf8')) as { version: string };

/** `package.json` from the sources (`src/cli/`), the build (`dist/src/cli/`) and the bundle (`dist/cli/`). */
function packageJsonPath(): string {
  return import.meta.url.includes('/dist/src/') ? '../../../package.json' : '../../package.json';
}

/** Builds the `os-audit` command line; every command has `--help`. */
export function buildProgram(io: CliIo): Command {
  const program = new Command('os-audit')
    .description('Store agent-OS session event logs in PostgreSQL and audit their OS snapshots.')
    .version(version)
    .option('--database-url <url>', 'PostgreSQL connection string (default: $DATABASE_URL; without either, the embedded PostgreSQL)')
    .option('--data-dir <dir>', `folder of the embedded PostgreSQL (default: $OS_AUDIT_DATA_DIR or ${DEFAULT_DATA_DIR})`)
    .option(
      '--projections <module>',
      `an ES module whose default export is the array of projections to migrate, run and check (default: $${PROJECTIONS_ENV}, else the projections os-audit ships; \`os-audit status\` lists the ones in use)`,
    )
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    });
  registerMigrateCommand(program, io);
  registerImportCommand(program, io);
  registerAppendCommand(program, io);
  registerEventsCommand(program, io);
  registerProjectCommand(program, io);
  registerSnapshotCommand(program, io);
  registerRebuildCommand(program, io);
  registerVerifyCommand(program, io);
  registerSealCommand(program, io);
  registerDigestCommand(program, io);
  registerStatusCommand(program, io);
  registerConsoleCommand(program, io);
  registerUpCommand(program, io, async (args) => {
    await buildProgram(io).parseAsync([...args], { from: 'user' });
  });
  registerDbCommand(program, io);
  forEachCommand(program, (command) => {
    // A usage error is its line and a pointer: the whole help after it buried the line.
    command.exitOverride().showHelpAfterError(`(see ${commandPath(command)} --help)`);
  });
  return program;
}

function forEachCommand(command: Command, visit: (command: Command) => void): void {
  visit(command);
  for (const sub of command.commands) forEachCommand(sub, visit);
}

/** `os-audit db start` for the command `start` under `db`. */
function commandPath(command: Command): string {
  return command.parent === null ? command.name() : `${commandPath(command.parent)} ${command.name()}`;
}

/**
 * Runs one `os-audit` invocation and returns its exit code: 0 success, 1 a rejected input or a
 * failed check, 2 a usage error.
 *
 * @example
 * ```ts
 * process.exitCode = await runCli(['import', 'logs/'], { stdin, stdout, stderr, env: process.env });
 * ```
 */
export async function runCli(args: readonly string[], io: CliIo): Promise<number> {
  // Commands read the database URL from this environment, where the embedded server's lands. The
  // rest is io's, inherited rather than copied: a copy would open a lazy stdin that no command reads.
  const session: CliIo = Object.create(io, { env: { value: { ...io.env }, enumerable: true } }) as CliIo;
  let embedded: LocalPostgres | undefined;
  const failure: FailureContext = {};
  const program = buildProgram(session);
  program.hook('preAction', async (_program, command) => {
    const options = command.optsWithGlobals<{ databaseUrl?: string; dataDir?: string }>();
    // `os-audit db …` manages the embedded server itself, whatever the database URL.
    if (command.parent?.name() === 'db') return;
    const given = options.databaseUrl || session.env.DATABASE_URL;
    if (given) {
      failure.databaseUrlFrom = options.databaseUrl ? '--database-url' : 'DATABASE_URL';
      failure.databaseUrl = given;
      checkDatabaseUrl(given, failure.databaseUrlFrom);
      return;
    }
    failure.databaseUrlFrom = 'the embedded PostgreSQL';
    embedded = await openEmbeddedDatabase(session, embeddedDataDir(options, session.env), ['os-audit', ...args].join(' '));
    session.env.DATABASE_URL = embedded.url;
    session.embeddedDatabaseUrl = embedded.url;
    failure.databaseUrl = embedded.url;
  });
  try {
    await program.parseAsync([...args], { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.exitCode === 0 ? 0 : 2;
    }
    if (error instanceof CliError) {
      io.stderr.write(`os-audit: ${error.message}\n`);
      return error.exitCode;
    }
    const ordinary = describeFailure(error, failure);
    if (ordinary !== undefined && !io.env.OS_AUDIT_DEBUG) {
      io.stderr.write(`os-audit: ${ordinary}\n`);
      return 1;
    }
    const detail = error instanceof Error ? (io.env.OS_AUDIT_DEBUG ? error.stack : error.message) : String(error);
    io.stderr.write(`os-audit: ${detail}\n`);
    return 1;
  } finally {
    await embedded?.stop().catch((error: unknown) => io.stderr.write(`os-audit: the embedded PostgreSQL did not stop: ${String(error)}\n`));
  }
}
