import type { Command } from 'commander';
import type { ProjectionStatus } from '../../projector/projection-status.js';
import { type CliIo, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';
import { chooseProjections, commandProjections } from '../projection-options.js';

export function registerStatusCommand(program: Command, io: CliIo): void {
  program
    .command('status')
    .description('show each projection: checkpoint, events and seconds behind, leader, last error, stopped sessions, what holds it back')
    .option('--projection <name>', 'only this projection (default: all)')
    .option('--json', 'print the statuses as a JSON array, one per projection')
    .action(async (options: { json?: boolean; projection?: string }, command: Command) => {
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
    });
}

function describeStatus(status: ProjectionStatus): string {
  const lines = [`projection ${status.projection} (version ${status.version})`];
  const { checkpoint, behind, leader, lastError, horizonHeldBy } = status;
  const where = status.distributed ? "each session's seq in the projection's heads (Citus)" : `transaction ${checkpoint.transactionId}, position ${checkpoint.position}`;
  lines.push(`  checkpoint: ${where} (updated ${checkpoint.updatedAt.toISOString()}; ${checkpoint.eventsApplied} events folded)`);
  lines.push(`  behind:     ${behind.events} events, ${behind.seconds.toFixed(1)} s`);
  lines.push(
    leader === null
      ? '  leader:     none'
      : `  leader:     ${leader.owner} (epoch ${leader.epoch}, lease ${leader.live ? 'held until' : 'expired at'} ${leader.expiresAt.toISOString()})`,
  );
  lines.push(`  last error: ${lastError === null ? 'none' : `${lastError.message}${lastError.at ? ` (at ${lastError.at.toISOString()})` : ''}`}`);
  if (status.skippedEvents > 0) lines.push(`  set aside:  ${status.skippedEvents} events in projection_errors`);
  if (status.blockedSessions > 0) {
    lines.push(`  stopped:    ${status.blockedSessions} sessions (every other session goes on; all are in the view os_blocked_sessions)`);
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
