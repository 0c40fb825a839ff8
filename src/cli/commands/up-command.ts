import path from 'node:path';
import type { Command } from 'commander';
import { type CliIo, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';
import { embeddedDataDir } from '../embedded-database.js';
import { chooseProjections, commandProjections } from '../projection-options.js';
import { type ProjectFlags, resolveDaemonAccess, resolveProjectSettings, runProjectDaemon, withProjectOptions } from './project-command.js';

/** Runs another `os-audit` command line in this invocation, on the same database. */
export type RunCommand = (args: readonly string[]) => Promise<void>;

export function registerUpCommand(program: Command, io: CliIo, runCommand: RunCommand): void {
  const command = program
    .command('up')
    .description('the whole job in one command: migrate, import logs (optional), say where to look, then run the projector daemon')
    .option('--import <dir>', 'import this directory of <session_id>.jsonl logs first (importing again stores nothing new)');
  withProjectOptions(command)
    .addHelpText('after', '\nThe daemon\'s flags are those of `os-audit project`. `npm start` runs `os-audit up --import samples`. Stop with Ctrl-C.')
    .action(async (options: ProjectFlags & { import?: string }, command: Command) => {
      const globals = command.optsWithGlobals();
      const url = resolveDatabaseUrl(globals.databaseUrl, io);
      // A wrong setting is refused before anything is migrated or imported.
      const settings = resolveProjectSettings(options, io.env);
      const access = await resolveDaemonAccess(options, settings, io.env);
      const projections = chooseProjections(await commandProjections(command, io), options.projection);
      // The same database and projections for every step.
      const projectionsModule = globals.projections === undefined ? [] : ['--projections', globals.projections as string];
      const onThisDatabase = (args: string[]) => runCommand(['--database-url', url, ...projectionsModule, ...args]);
      await onThisDatabase(['migrate']);
      if (options.import !== undefined) await onThisDatabase(['import', options.import]);
      const example = await withDatabase(url, (db) => db.selectFrom('sessions').select('session_id').orderBy('session_id').limit(1).executeTakeFirst(), {
        rideThrough: { io, rerun: 'work' },
      });
      const session = example ? shellWord(example.session_id) : '<session_id>';
      // No password on the screen (it ends up in scrollback and screenshots): the embedded
      // server's is named by its file, a server's is the user's own.
      const shown = withoutPassword(url);
      const passwordFile = url === io.embeddedDatabaseUrl ? path.join(embeddedDataDir(globals, io.env), 'password') : undefined;
      const withPassword = passwordFile === undefined ? '' : `PGPASSWORD="$(cat ${shellWord(passwordFile)})" `;
      // Said once the daemon serves its metrics and console: a busy port fails before it.
      const sayUp = (metricsUrl: string | undefined) =>
        write(
          io.stdout,
          [
            '',
            'os-audit is up: the projector below folds every new event into the projections\' tables.',
            `  database    ${shown}${passwordFile === undefined ? '' : ` (password in ${passwordFile})`}`,
            ...(metricsUrl === undefined ? [] : [`  console     ${metricsUrl}/`]),
            `  a snapshot  npx os-audit snapshot ${session}`,
            `  overview    ${withPassword}psql '${shown}' -c 'SELECT * FROM os_session_overview'`,
            '  progress    npx os-audit status',
            'Stop with Ctrl-C.',
            '',
            '',
          ].join('\n'),
        );
      await runProjectDaemon({ url, projections, flags: options, settings, access, io, onStarted: sayUp });
    });
}

function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password === '') return url;
    parsed.password = '';
    return parsed.toString();
  } catch {
    return '<DATABASE_URL>';
  }
}

function shellWord(text: string): string {
  return /^[\w./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}
