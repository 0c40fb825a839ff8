import type { Command } from 'commander';
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import { exactInteger } from '../../db/exact-integer.js';
import { DEFAULT_BATCH_SIZE } from '../../projector/default-batch-size.js';
import type { RebuildReport } from '../../projector/rebuild-projection.js';
import { type CliIo, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';
import { integerOption } from '../parse-integer-option.js';
import { chooseProjections, commandProjections } from '../projection-options.js';
import { countOf } from '../../text/count-of.js';

export function registerRebuildCommand(program: Command, io: CliIo): void {
  program
    .command('rebuild')
    .description("fold each projection again from the log, in one transaction per projection (dashboards see the old tables until it commits)")
    .option('--projection <name>', 'only this projection (default: all)')
    .option('--batch-size <events>', 'events read per batch', integerOption(1), DEFAULT_BATCH_SIZE)
    .option('--skip-invalid', 'set events a projection cannot read aside instead of stopping their session')
    .action(async (options: { batchSize: number; skipInvalid?: boolean; projection?: string }, command: Command) => {
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const [{ rebuildProjection }, { ProgressLine }] = await Promise.all([import('../../projector/rebuild-projection.js'), import('../progress-line.js')]);
      for (const projection of chooseProjections(await commandProjections(command, io), options.projection)) {
        const progress = new ProgressLine(io.stderr, `rebuilding ${projection.name}`);
        let report: RebuildReport;
        try {
          report = await withDatabase(url, async (db) => {
            // The bar's total; counted only when there is a bar to draw.
            const total = progress.visible ? await countStoredEvents(db) : undefined;
            return rebuildProjection(db, projection, {
              batchSize: options.batchSize,
              skipInvalid: options.skipInvalid,
              onProgress: (events) => progress.update(events, total, `${events}/${total} events folded`),
            });
          }, { rideThrough: { io, rerun: 'work' } });
        } finally {
          progress.done();
        }
        const skipped = report.skipped > 0 ? `; ${countOf(report.skipped, 'event')} set aside in projection_errors` : '';
        const stopped = report.stopped > 0 ? `; ${countOf(report.stopped, 'session')} stopped (see os-audit status)` : '';
        await write(io.stdout, `rebuilt ${projection.name} (version ${projection.version}) from ${countOf(report.eventsApplied, 'event')}${skipped}${stopped}\n`);
      }
    });
}

async function countStoredEvents(db: Kysely<DB>): Promise<number> {
  const row = await db.selectFrom('session_events').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
  return exactInteger(row.n);
}
