import type { Command } from 'commander';
import type { Kysely } from 'kysely';
import { osSnapshotProjection } from '../../../projections/os-snapshot/os-snapshot-projection.js';
import type { DB } from '../../db/schema.js';
import { DEFAULT_BATCH_SIZE } from '../../projector/projector.js';
import { type RebuildReport, rebuildProjection } from '../../projector/rebuild-projection.js';
import { type CliIo, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';
import { integerOption } from '../parse-integer-option.js';
import { ProgressLine } from '../progress-line.js';

export function registerRebuildCommand(program: Command, io: CliIo): void {
  program
    .command('rebuild')
    .description('fold every snapshot again from the log, in one transaction (dashboards see the old tables until it commits)')
    .option('--batch-size <events>', 'events read per batch', integerOption(1), DEFAULT_BATCH_SIZE)
    .option('--skip-invalid', 'set events the snapshot cannot read aside instead of stopping their session')
    .action(async (options: { batchSize: number; skipInvalid?: boolean }, command: Command) => {
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const progress = new ProgressLine(io.stderr, 'rebuilding');
      let report: RebuildReport;
      try {
        report = await withDatabase(url, async (db) => {
          // The bar's total; counted only when there is a bar to draw.
          const total = progress.visible ? await countStoredEvents(db) : undefined;
          return rebuildProjection(db, osSnapshotProjection, {
            batchSize: options.batchSize,
            skipInvalid: options.skipInvalid,
            onProgress: (events) => progress.update(events, total, `${events}/${total} events folded`),
          });
        }, { rideThrough: { io, rerun: 'work' } });
      } finally {
        progress.done();
      }
      const skipped = report.skipped > 0 ? `; ${report.skipped} events set aside in projection_errors` : '';
      const stopped = report.stopped > 0 ? `; ${report.stopped} sessions stopped (see os-audit status)` : '';
      await write(io.stdout, `rebuilt the OS snapshot from ${report.eventsApplied} events${skipped}${stopped}\n`);
    });
}

async function countStoredEvents(db: Kysely<DB>): Promise<number> {
  const row = await db.selectFrom('session_events').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}
