import type { Command } from 'commander';
import { osSnapshotProjection } from '../../../projections/os-snapshot/os-snapshot-projection.js';
import { ProjectionHaltedError } from '../../projector/projection-halted-error.js';
import { rebuildProjection } from '../../projector/rebuild-projection.js';
import { type CliIo, CliError, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';
import { integerOption } from '../parse-integer-option.js';
import { ProgressLine } from '../progress-line.js';

export function registerRebuildCommand(program: Command, io: CliIo): void {
  program
    .command('rebuild')
    .description('fold every snapshot again from the log, in one transaction (dashboards see the old tables until it commits)')
    .option('--batch-size <events>', 'events read per batch', integerOption(1), 50_000)
    .option('--skip-invalid', 'set events the snapshot cannot read aside instead of stopping')
    .action(async (options: { batchSize: number; skipInvalid?: boolean }, command: Command) => {
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const progress = new ProgressLine(io.stderr);
      try {
        const report = await withDatabase(url, (db) =>
          rebuildProjection(db, osSnapshotProjection, {
            batchSize: options.batchSize,
            skipInvalid: options.skipInvalid,
            onProgress: (events) => progress.update(`rebuilding: ${events} events folded`),
          }),
        );
        progress.done();
        const skipped = report.skipped > 0 ? `; ${report.skipped} events set aside in projection_errors` : '';
        await write(io.stdout, `rebuilt the OS snapshot from ${report.eventsApplied} events${skipped}\n`);
      } catch (error) {
        progress.done();
        if (error instanceof ProjectionHaltedError) throw new CliError(`${error.message}; nothing was changed`);
        throw error;
      }
    });
}
