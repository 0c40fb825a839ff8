import type { Command } from 'commander';
import type { Projection } from '../../projector/projection.js';
import type { VerifyReport, VerifySelection } from '../../projector/verify-projection.js';
import { type CliIo, CliError, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';
import { integerOption } from '../parse-integer-option.js';
import { chooseProjections, commandProjections } from '../projection-options.js';
import { countOf } from '../../text/count-of.js';

export function registerVerifyCommand(program: Command, io: CliIo): void {
  program
    .command('verify')
    .description("prove SQL snapshots right: compare each projection's tables with the in-memory fold of each log")
    .argument('[sessions...]', 'the sessions to verify')
    .option('--all', 'verify every session')
    .option('--sample <n>', 'verify n sessions taken at random', integerOption(1))
    .option('--projection <name>', 'only this projection (default: all)')
    .addHelpText('after', '\nPrints each differing field; exit code 1 when any snapshot differs from its log, or a log holds a corrupt event.')
    .action(async (sessions: string[], options: { all?: boolean; sample?: number; projection?: string }, command: Command) => {
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const chosen = [sessions.length > 0, options.all === true, options.sample !== undefined].filter(Boolean).length;
      if (chosen !== 1) throw new CliError('name sessions, or give --all or --sample N (one of them)', 2);
      const selection: VerifySelection = options.all ? { all: true } : options.sample !== undefined ? { sample: options.sample } : { sessions };
      const projections = chooseProjections(await commandProjections(command, io), options.projection);
      const [{ verifyProjection }, { ProgressLine }] = await Promise.all([import('../../projector/verify-projection.js'), import('../progress-line.js')]);
      const reports = await withDatabase(
        url,
        async (db) => {
          const done: { projection: Projection; report: VerifyReport }[] = [];
          for (const projection of projections) {
            const progress = new ProgressLine(io.stderr, `verifying ${projection.name}`);
            try {
              const report = await verifyProjection(db, projection, selection, (checked, total) => progress.update(checked, total, `${checked}/${total} sessions`));
              done.push({ projection, report });
            } finally {
              progress.done();
            }
          }
          return done;
        },
        { rideThrough: { io, rerun: 'work' } },
      );
      let differing = 0;
      const corrupt = new Set<string>();
      for (const { projection, report } of reports) {
        for (const mismatch of report.mismatches) {
          await write(io.stdout, `${projection.name}: session ${JSON.stringify(mismatch.sessionId)} differs from its log:\n`);
          for (const difference of mismatch.differences) await write(io.stdout, `  ${difference}\n`);
        }
        for (const log of report.corrupt) {
          await write(io.stdout, `${projection.name}: session ${JSON.stringify(log.sessionId)} cannot be verified: seq ${log.seq}: ${log.problem}\n`);
          corrupt.add(log.sessionId);
        }
        const pending = report.pending.length > 0 ? `, ${report.pending.length} not projected yet` : '';
        const corrupted = report.corrupt.length > 0 ? `, ${report.corrupt.length} ${report.corrupt.length === 1 ? 'has a corrupt event in its' : 'have a corrupt event in their'} log` : '';
        await write(io.stdout, `${projection.name}: verified ${countOf(report.checked, 'session')}: ${report.mismatches.length} ${report.mismatches.length === 1 ? 'differs from its' : 'differ from their'} log${corrupted}${pending}\n`);
        differing += report.mismatches.length;
      }
      const failures = [
        ...(differing > 0 ? [differing === 1 ? '1 snapshot differs from its log' : `${differing} snapshots differ from their log`] : []),
        ...(corrupt.size > 0 ? [corrupt.size === 1 ? '1 session has a corrupt event in its log' : `${corrupt.size} sessions have a corrupt event in their log`] : []),
      ];
      if (failures.length > 0) throw new CliError(failures.join('; '));
    });
}
