import type { Command } from 'commander';
import { osSnapshotProjection } from '../../../projections/os-snapshot/os-snapshot-projection.js';
import { type ProjectionStatus, readProjectionStatus } from '../../projector/projection-status.js';
import { type CliIo, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';

export function registerStatusCommand(program: Command, io: CliIo): void {
  program
    .command('status')
    .description('show the projection: checkpoint, events and seconds behind, leader, last error, stopped sessions, what holds it back')
    .option('--json', 'print the status as JSON')
    .action(async (options: { json?: boolean }, command: Command) => {
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const status = await withDatabase(url, (db) => readProjectionStatus(db, osSnapshotProjection.name), { rideThrough: { io, rerun: 'work' } });
      await write(io.stdout, options.json ? `${JSON.stringify(status, null, 2)}\n` : describeStatus(status));
    });
}

function describeStatus(status: ProjectionStatus): string {
  const lines = [`projection ${status.projection}`];
  const { checkpoint, behind, leader, lastError, horizonHeldBy } = status;
  lines.push(`  checkpoint: transaction ${checkpoint.transactionId}, position ${checkpoint.position} (updated ${checkpoint.updatedAt.toISOString()}; ${checkpoint.eventsApplied} events folded)`);
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
