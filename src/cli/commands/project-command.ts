import type { Command } from 'commander';
import { osSnapshotProjection } from '../../../projections/os-snapshot/os-snapshot-projection.js';
import { ProjectionHaltedError } from '../../projector/projection-halted-error.js';
import { DEFAULT_BATCH_SIZE, Projector, type ProjectorEvent } from '../../projector/projector.js';
import { type CliIo, CliError, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';
import { integerOption } from '../parse-integer-option.js';

interface ProjectOptions {
  once?: boolean;
  batchSize: number;
  pollInterval: number;
  leaseTtl: number;
  skipInvalid?: boolean;
  owner?: string;
}

export function registerProjectCommand(program: Command, io: CliIo): void {
  program
    .command('project')
    .description('run the projector daemon: fold new events into the OS snapshot tables as they are appended')
    .option('--once', 'catch up with every event committed before the start, then exit')
    .option('--batch-size <events>', 'most events read per batch', integerOption(1), DEFAULT_BATCH_SIZE)
    .option('--poll-interval <ms>', 'longest wait between looks at the log when no append is notified', integerOption(10), 1000)
    .option('--lease-ttl <ms>', 'lease time to live: a standby takes over this long after the leader dies', integerOption(500), 5000)
    .option('--skip-invalid', 'set events the snapshot cannot read aside in projection_errors instead of stopping')
    .option('--owner <name>', "this projector's name in the lease (default host:pid:random)")
    .addHelpText(
      'after',
      '\nAny number of daemons may run: one holds the lease and writes, the others stand by. SIGINT or\n' +
        'SIGTERM stops the daemon cleanly: the current batch finishes or rolls back, the lease is released,\n' +
        'exit code 0.',
    )
    .action(async (options: ProjectOptions, command: Command) => {
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const stop = new AbortController();
      const onSignal = () => stop.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      try {
        await withDatabase(url, async (db) => {
          const projector = new Projector(db, osSnapshotProjection, {
            batchSize: options.batchSize,
            pollIntervalMs: options.pollInterval,
            leaseTtlMs: options.leaseTtl,
            skipInvalid: options.skipInvalid,
            owner: options.owner,
            listenUrl: options.once ? undefined : url,
            onEvent: logger(io, Boolean(options.once)),
          });
          if (!options.once) {
            await write(io.stderr, `os-audit projector ${projector.lease.owner} started\n`);
            await projector.run(stop.signal);
            await write(io.stderr, 'os-audit projector stopped; lease released\n');
            return;
          }
          const report = await projector.catchUp(stop.signal);
          const at = report.checkpoint ? ` (checkpoint: transaction ${report.checkpoint.transactionId}, position ${report.checkpoint.position})` : '';
          const skipped = report.skipped > 0 ? `; ${report.skipped} events set aside in projection_errors` : '';
          await write(io.stdout, `projected ${report.eventsApplied} events in ${report.batches} batches${skipped}${at}\n`);
        });
      } catch (error) {
        if (error instanceof ProjectionHaltedError) throw new CliError(error.message);
        throw error;
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
    });
}

/** Human log lines on stderr; batches are summed up every five seconds. */
function logger(io: CliIo, quietBatches: boolean): (event: ProjectorEvent) => void {
  let pending = 0;
  let lastReport = Date.now();
  const line = (text: string) => io.stderr.write(`${new Date().toISOString()} ${text}\n`);
  return (event) => {
    switch (event.type) {
      case 'leader':
        return line(`leader: ${event.owner} holds the lease (epoch ${event.epoch})`);
      case 'standby':
        return line(`standby: ${event.reason}`);
      case 'halted':
        return line(`halted: ${event.error.message}`);
      case 'retry':
        return line(`retrying in ${event.delayMs} ms: ${event.error.message}`);
      case 'waiting':
        return quietBatches ? line(`waiting: ${event.reason}`) : undefined;
      case 'batch':
        pending += event.result.eventsApplied;
        if (quietBatches || Date.now() - lastReport < 5000) return;
        line(`projected ${pending} events (checkpoint: transaction ${event.result.checkpoint.transactionId}, position ${event.result.checkpoint.position})`);
        pending = 0;
        lastReport = Date.now();
    }
  };
}
