import type { Command } from 'commander';
import { type CliIo, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';
import { integerOption } from '../parse-integer-option.js';
import { countOf } from '../../text/count-of.js';

export function registerSealCommand(program: Command, io: CliIo): void {
  program
    .command('seal')
    .description("compress the log's history that every projection has folded: move it into a columnar partition of session_events (needs citus_columnar on the server)")
    .option('--lock-timeout <ms>', "how long the swap waits for writers' open transactions before it gives up", integerOption(1), 10_000)
    .option('--max-moved <events>', 'the most events the swap may move while writers and readers wait (those of the last transaction every projection folded, and later); with more, nothing is sealed', integerOption(0), 100_000)
    .addHelpText(
      'after',
      '\nEvery reader of session_events reads on as before; writers and readers wait only for the swap, which moves what the projections have not folded yet (at most --max-moved events).' +
        '\nThe first seal makes session_events a table partitioned by transaction. Run it as the schema owner, as migrate.',
    )
    .action(async (options: { lockTimeout: number; maxMoved: number }, command: Command) => {
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const { sealEventLog } = await import('../../store/seal-event-log.js');
      const report = await withDatabase(url, (db) => sealEventLog(db, { lockTimeoutMs: options.lockTimeout, maxMovedEvents: options.maxMoved }));
      if (report.partitioned) await write(io.stdout, 'session_events is now partitioned by transaction (its rows stayed where they were)\n');
      if (report.range === undefined) {
        await write(io.stdout, 'nothing to seal: no event since the last seal that every projection has folded\n');
        return;
      }
      const { from, to } = report.range;
      const transactions = from === null ? `before transaction ${to}` : `from transaction ${from} to before ${to}`;
      await write(io.stdout, `sealed ${countOf(report.sealedEvents, 'event')} (their transactions: ${transactions}) into ${report.sealedTable}\n`);
    });
}
