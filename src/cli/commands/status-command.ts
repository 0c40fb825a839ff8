import type { Command } from 'commander';
import type { ProjectionStatus } from '../../projector/projection-status.js';
import { type CliIo, CliError, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';
import { integerOption } from '../parse-integer-option.js';
import { chooseProjections, commandProjections } from '../projection-options.js';
import { countOf } from '../../text/count-of.js';

export function registerStatusCommand(program: Command, io: CliIo): void {
  program
    .command('status')
    .description('show each projection: checkpoint, events and seconds behind, leader, last error, stopped sessions, what holds it back')
    .option('--projection <name>', 'only this projection (default: all)')
    .option('--json', 'print the statuses as a JSON array, one per projection')
    .option('--fail-if-behind <seconds>', 'also exit 1 when a projection is more than this many seconds behind', integerOption(0))
    .addHelpText('after', '\nExit code 1 when a projection is halted (its last error is newer than its last progress), or behind more than --fail-if-behind.')
    .action(async (options: { json?: boolean; projection?: string; failIfBehind?: number }, command: Command) => {
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const { readProjectionStatus } = await import('../../projector/projection-status.js');
      const projections = chooseProjections(await commandProjections(command, io), options.projection);
      const statuses = await withDatabase(
        url,
        async (db) => {
          const read: ProjectionStatus[] = [];
          for (const projection of projections) read.push(await readProjectionStatus(db, projection.name));
          return read;
        },
        { rideThrough: { io, rerun: 'work' } },
      );
      await write(io.stdout, options.json ? `${JSON.stringify(statuses, null, 2)}\n` : statuses.map(describeStatus).join(''));
      const failures = statuses.flatMap((status) => failedChecks(status, options.failIfBehind));
      if (failures.length > 0) throw new CliError(failures.join('; '));
    });
}

/** What makes `status` exit 1 for this projection: halted, or further behind than allowed. */
function failedChecks(status: ProjectionStatus, failIfBehind: number | undefined): string[] {
  const failed: string[] = [];
  if (status.halted !== null) failed.push(`projection ${status.projection} is halted: ${status.halted.reason}`);
  if (failIfBehind !== undefined && status.behind.seconds > failIfBehind) {
    failed.push(`projection ${status.projection} is ${status.behind.seconds.toFixed(1)} s behind, more than --fail-if-behind ${failIfBehind}`);
  }
  return failed;
}

function describeStatus(status: ProjectionStatus): string {
  const lines = [`projection ${status.projection} (version ${status.version})`];
  const { checkpoint, behind, leader, lastError, horizonHeldBy } = status;
  const where = status.distributed ? "each session's seq in the projection's heads (Citus)" : `transaction ${checkpoint.transactionId}, position ${checkpoint.position}`;
  lines.push(`  checkpoint: ${where} (updated ${checkpoint.updatedAt.toISOString()}; ${countOf(checkpoint.eventsApplied, 'event')} folded)`);
  lines.push(`  behind:     ${countOf(behind.events, 'event')}, ${behind.seconds.toFixed(1)} s`);
  lines.push(
    leader === null
      ? '  leader:     none'
      : `  leader:     ${leader.owner} (epoch ${leader.epoch}, lease ${leader.live ? 'held until' : 'expired at'} ${leader.expiresAt.toISOString()})`,
  );
  lines.push(`  last error: ${lastError === null ? 'none' : `${lastError.message}${lastError.at ? ` (at ${lastError.at.toISOString()})` : ''}`}`);
  if (status.halted !== null) lines.push('  halted:     yes: no batch has succeeded since that error (a daemon retries it)');
  if (status.skippedEvents > 0) lines.push(`  set aside:  ${countOf(status.skippedEvents, 'event')} in projection_errors`);
  if (status.blockedSessions > 0) {
    lines.push(`  stopped:    ${countOf(status.blockedSessions, 'session')} (every other session goes on; all are in the view os_blocked_sessions)`);
    for (const b of status.blocked) {
      lines.push(`              ${JSON.stringify(b.sessionId)} at seq ${b.seq}${b.kind === null ? '' : ` (${b.kind})`}, since ${b.since.toISOString()}: ${b.problem}`);
    }
  }
  if (horizonHeldBy !== null) {
    const h = horizonHeldBy;
    const who = h.preparedTransaction !== null
      ? `prepared transaction ${JSON.stringify(h.preparedTransaction)} in database ${h.database}`
      : `pid ${h.pid} (database ${h.database}, application ${JSON.stringify(h.application ?? '')}, state ${h.state})`;
    lines.push(`  held back:  committed events wait for an older open transaction: ${who}, open for ${(h.transactionAgeSeconds ?? 0).toFixed(1)} s`);
    if (h.query) lines.push(`              its last query: ${h.query.replace(/\s+/g, ' ')}`);
  }
  return `${lines.join('\n')}\n`;
}
