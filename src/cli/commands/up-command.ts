import type { Command } from 'commander';
import { type CliIo, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';

/** Runs another `os-audit` command line in this invocation, on the same database. */
export type RunCommand = (args: readonly string[]) => Promise<void>;

export function registerUpCommand(program: Command, io: CliIo, runCommand: RunCommand): void {
  program
    .command('up')
    .description('the whole job in one command: migrate, import logs (optional), say where to look, then run the projector daemon')
    .option('--import <dir>', 'import this directory of <session_id>.jsonl logs first (importing again stores nothing new)')
    .option('--direct-url <url>', "the daemon's LISTEN connection straight to PostgreSQL when the database URL goes through a pooler in transaction mode (env OS_AUDIT_DIRECT_DATABASE_URL)")
    .addHelpText('after', '\n`npm start` runs `os-audit up --import samples`. Stop with Ctrl-C.')
    .action(async (options: { import?: string; directUrl?: string }, command: Command) => {
      const globals = command.optsWithGlobals();
      const url = resolveDatabaseUrl(globals.databaseUrl, io);
      // The same database and projections for every step.
      const projections = globals.projections === undefined ? [] : ['--projections', globals.projections as string];
      const onThisDatabase = (args: string[]) => runCommand(['--database-url', url, ...projections, ...args]);
      await onThisDatabase(['migrate']);
      if (options.import !== undefined) await onThisDatabase(['import', options.import]);
      const example = await withDatabase(url, (db) => db.selectFrom('sessions').select('session_id').orderBy('session_id').limit(1).executeTakeFirst(), {
        rideThrough: { io, rerun: 'work' },
      });
      const session = example ? shellWord(example.session_id) : '<session_id>';
      // The embedded server's generated password is for this machine; a server's is not ours to print.
      const shown = url === io.embeddedDatabaseUrl ? url : withoutPassword(url);
      await write(
        io.stdout,
        [
          '',
          'os-audit is up: the projector below folds every new event into the projections\' tables.',
          `  database    ${shown}`,
          `  a snapshot  npx os-audit snapshot ${session}`,
          `  overview    psql '${shown}' -c 'SELECT * FROM os_session_overview'`,
          '  progress    npx os-audit status',
          'Stop with Ctrl-C.',
          '',
          '',
        ].join('\n'),
      );
      await onThisDatabase(['project', ...(options.directUrl === undefined ? [] : ['--direct-url', options.directUrl])]);
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
  return /^[\w.-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}
