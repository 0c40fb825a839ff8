// fs.promises, read when used: loading node:fs/promises at every command's start costs a millisecond or two.
import { promises as fs } from 'node:fs';
import type { Command } from 'commander';
import type { Projection } from '../../projector/projection.js';
import type { VerifyReport, VerifySelection } from '../../projector/verify-projection.js';
import type { FolderDifference } from '../../verify/verify-against-folder.js';
import { type CliIo, CliError, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';
import { resolveLimits } from '../limit-options.js';
import { reportEventChain, verifyDigestCommand } from './verify-integrity.js';
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
    .option('--against <dir>', "instead of snapshots: check the stored logs against the runtime's log folder, byte for byte")
    .option('--digest <path>', 'instead of snapshots: check a digest file, or a folder of them, and that the log still holds what each covers')
    .option('--public-key <file>', "with --digest: the Ed25519 public key (PEM) the digests' signatures must verify with")
    .addHelpText('after', '\nChecks the hash chain of the sessions verified (with --all or named sessions, without --projection), then the snapshots.')
    .addHelpText('after', 'Prints each broken chain and each differing field; exit code 1 when any chain is broken, any snapshot differs from its log, or a log holds a corrupt event.')
    .addHelpText('after', AGAINST_HELP)
    .action(async (sessions: string[], options: { all?: boolean; sample?: number; projection?: string; against?: string; digest?: string; publicKey?: string }, command: Command) => {
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const chosen = [sessions.length > 0, options.all === true, options.sample !== undefined, options.against !== undefined, options.digest !== undefined].filter(Boolean).length;
      if (chosen !== 1) throw new CliError('name sessions, or give --all, --sample N, --against DIR or --digest PATH (one of them)', 2);
      if (options.publicKey !== undefined && options.digest === undefined) throw new CliError('--public-key checks the signatures of --digest: give --digest too', 2);
      if (options.digest !== undefined) return verifyDigestCommand(url, options.digest, options.publicKey, io);
      if (options.against !== undefined) {
        if (options.projection !== undefined) throw new CliError('--projection does not apply to --against, which compares the logs themselves', 2);
        return verifyAgainstFolderCommand(url, options.against, io);
      }
      const selection: VerifySelection = options.all ? { all: true } : options.sample !== undefined ? { sample: options.sample } : { sessions };
      const projections = chooseProjections(await commandProjections(command, io), options.projection);
      // --sample and --projection look at snapshots: the chain is checked over whole logs, with --all or by name.
      const brokenChains =
        options.sample === undefined && options.projection === undefined ? await withDatabase(url, (db) => reportEventChain(db, options.all ? undefined : sessions, io), { rideThrough: { io, rerun: 'work' } }) : 0;
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
        if (!report.snapshotsCompared) {
          await write(io.stdout, `${projection.name}: SQL-only, no in-memory fold to compare its snapshots with: checked only how far each session was folded and where it stopped\n`);
        }
        await write(io.stdout, `${projection.name}: verified ${countOf(report.checked, 'session')}: ${report.mismatches.length} ${report.mismatches.length === 1 ? 'differs from its' : 'differ from their'} log${corrupted}${pending}\n`);
        differing += report.mismatches.length;
      }
      const failures = [
        ...(brokenChains > 0 ? [brokenChains === 1 ? "1 session's hash chain is broken" : `${brokenChains} sessions' hash chains are broken`] : []),
        ...(differing > 0 ? [differing === 1 ? '1 snapshot differs from its log' : `${differing} snapshots differ from their log`] : []),
        ...(corrupt.size > 0 ? [corrupt.size === 1 ? '1 session has a corrupt event in its log' : `${corrupt.size} sessions have a corrupt event in their log`] : []),
      ];
      if (failures.length > 0) throw new CliError(failures.join('; '));
    });
}

const AGAINST_HELP = `
--against DIR: each <session_id>.jsonl file of the runtime's log folder DIR (either SDK's
layout; a kernel-journal/ folder is not compared) against the database: a session's stored
events must be byte for byte what importing its file stores. Prints each session that is not
clean, with the first seq that differs: differing, missing (in the folder, not in the
database), extra (in the database, not in the folder), unreadable (a line import would
refuse); then the counts. Exit code 1 when any session is not clean.`;

/** `verify --against DIR`: a line for each session that is not clean, as it is found, then the counts. */
async function verifyAgainstFolderCommand(url: string, directory: string, io: CliIo): Promise<void> {
  if (!(await fs.stat(directory)).isDirectory()) throw new CliError(`${directory} is not a directory: give a runtime log folder of <session_id>.jsonl files`);
  const { verifyAgainstFolder } = await import('../../verify/verify-against-folder.js');
  const limits = resolveLimits({}, io.env);
  // The lines go out as found, so a lost connection is ridden through query by query, never by running again.
  const report = await withDatabase(
    url,
    (db) => verifyAgainstFolder(db, directory, { ...limits, onDifference: (difference) => write(io.stdout, `${describeFolderDifference(difference)}\n`) }),
    { rideThrough: { io, rerun: 'connect' } },
  );
  if (report.ignoredEntries.length > 0) {
    const more = report.ignoredEntries.length > IGNORED_SHOWN ? ` and ${report.ignoredEntries.length - IGNORED_SHOWN} more` : '';
    await write(io.stderr, `not compared: ${report.ignoredEntries.slice(0, IGNORED_SHOWN).join(', ')}${more} (no <session_id>.jsonl files)\n`);
  }
  const { counts } = report;
  await write(
    io.stdout,
    `verified ${countOf(report.sessions, 'session')} against ${directory}: ${counts.clean} clean, ${counts.differs} differing, ` +
      `${counts.missing} missing, ${counts.extra} extra, ${counts.unreadable} unreadable\n`,
  );
  const notClean = report.sessions - counts.clean;
  if (notClean > 0) throw new CliError(`${notClean} of ${countOf(report.sessions, 'session')} ${notClean === 1 ? 'is' : 'are'} not stored as the folder has ${notClean === 1 ? 'it' : 'them'}`);
}

/** Entries named on the line of what was not compared: a folder full of other files must not flood the terminal. */
const IGNORED_SHOWN = 10;

/** `session "s": differs at seq 3 (logs/s.jsonl:4): the database holds another event`. */
function describeFolderDifference({ sessionId, kind, seq, file, line, reason }: FolderDifference): string {
  const at = seq === null ? '' : ` at seq ${seq}`;
  const where = file === null ? '' : ` (${file}${line === null ? '' : `:${line}`})`;
  return `session ${JSON.stringify(sessionId)}: ${kind}${at}${where}: ${reason}`;
}
