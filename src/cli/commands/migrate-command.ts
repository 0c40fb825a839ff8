import type { Command } from 'commander';
import type { ChainBackfillProgress } from '../../store/backfill-event-chain.js';
import { commandProjections } from '../projection-options.js';
import { type CliIo, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';

export function registerMigrateCommand(program: Command, io: CliIo): void {
  program
    .command('migrate')
    .description("apply the database migrations, the engine's and each projection's, and register the projections (a second run applies nothing)")
    .action(async (_options, command: Command) => {
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const { migrateToLatest } = await import('../../migrate-to-latest.js');
      const projections = await commandProjections(command, io);
      const onChainProgress = (progress: ChainBackfillProgress) =>
        void write(io.stderr, `chained ${progress.chainedEvents} of ${progress.totalEvents} events stored before the hash chain (${progress.chainedSessions} sessions)\n`);
      const applied = await withDatabase(url, (db) => migrateToLatest(db, projections, { onChainProgress }), { rideThrough: { io, rerun: 'work' } });
      await write(io.stdout, applied.length === 0 ? 'schema is up to date; nothing to apply\n' : `applied ${applied.join(', ')}\n`);
    });
}
