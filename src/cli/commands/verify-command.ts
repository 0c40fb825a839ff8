import type { Command } from 'commander';
import { type VerifyReport, type VerifySelection, verifyOsSnapshots } from '../../../projections/os-snapshot/verify-os-snapshots.js';
import { type CliIo, CliError, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';
import { integerOption } from '../parse-integer-option.js';
import { ProgressLine } from '../progress-line.js';

export function registerVerifyCommand(program: Command, io: CliIo): void {
  program
    .command('verify')
    .description('prove SQL snapshots right: compare them with the in-memory fold of each log')
    .argument('[sessions...]', 'the sessions to verify')
    .option('--all', 'verify every session')
    .option('--sample <n>', 'verify n sessions taken at random', integerOption(1))
    .addHelpText('after', '\nPrints each differing field; exit code 1 when any snapshot differs from its log.')
    .action(async (sessions: string[], options: { all?: boolean; sample?: number }, command: Command) => {
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const chosen = [sessions.length > 0, options.all === true, options.sample !== undefined].filter(Boolean).length;
      if (chosen !== 1) throw new CliError('name sessions, or give --all or --sample N (one of them)', 2);
      const selection: VerifySelection = options.all ? { all: true } : options.sample !== undefined ? { sample: options.sample } : { sessions };
      const progress = new ProgressLine(io.stderr, 'verifying');
      let report: VerifyReport;
      try {
        report = await withDatabase(url, (db) =>
          verifyOsSnapshots(db, selection, (checked, total) => progress.update(checked, total, `${checked}/${total} sessions`)),
          { rideThrough: { io, rerun: 'work' } },
        );
      } finally {
        progress.done();
      }
      for (const mismatch of report.mismatches) {
        await write(io.stdout, `session ${JSON.stringify(mismatch.sessionId)} differs from its log:\n`);
        for (const difference of mismatch.differences) await write(io.stdout, `  ${difference}\n`);
      }
      const pending = report.pending.length > 0 ? `, ${report.pending.length} not projected yet` : '';
      await write(io.stdout, `verified ${report.checked} sessions: ${report.mismatches.length} differ from their log${pending}\n`);
      if (report.mismatches.length > 0) throw new CliError(`${report.mismatches.length} snapshots differ from their log`);
    });
}
