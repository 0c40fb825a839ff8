// fs.promises, read when used: loading node:fs/promises at every command's start costs a millisecond or two.
import { promises as fs } from 'node:fs';
import type { Command } from 'commander';
import type { ImportProgress, ImportReport } from '../../import/import-logs.js';
import type { JournalCounts } from '../../import/import-kernel-journal.js';
import { DEFAULT_CHUNK_SIZE } from '../../import/default-chunk-size.js';
import { MAX_JSON_DEPTH } from '../../json/parse-json.js';
import type { Limits } from '../../events/limits.js';
import { resolveLimits, withLimitOptions } from '../limit-options.js';
import { integerOption } from '../parse-integer-option.js';
import { type CliIo, CliError, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';
import type { ProgressLine } from '../progress-line.js';
import { countOf } from '../../text/count-of.js';

/** Files of a directory stored at once (and database connections to do it). */
const IMPORT_CONCURRENCY = 4;

export function registerImportCommand(program: Command, io: CliIo): void {
  withLimitOptions(program.command('import'))
    .description(
      'import session logs: a log folder of <session_id>.jsonl files with its kernel-journal/, one <session_id>.jsonl file, ' +
        'or one JSONL stream of {"session_id":...,"seq":N,"event":{...}} lines (a file, or - for stdin)',
    )
    .argument('<path>', 'a log folder, a .jsonl file, or - for standard input')
    .option('--strict', 'refuse event kinds the contract does not name')
    .option('--chunk-size <events>', 'events per database write', integerOption(1), DEFAULT_CHUNK_SIZE)
    .addHelpText(
      'after',
      `
Formats (symbolic links are followed):
  FOLDER  a log folder: each <session_id>.jsonl holds one session, a line {"seq":N,"event":{...}};
          its kernel-journal/ folder (deepstrike SDK v0.2.60) goes into the kernel journal tables
  FILE    one <session_id>.jsonl file: that session; a file whose first line has a "session_id"
          is a stream, a line {"session_id":...,"seq":N,"event":{...}}
  -       a stream on standard input

A session's lines may come in any seq order: they are stored in seq order, and a seq still
missing when the input ends is an error. A line repeating a seq with the same event counts as
already stored. An empty log file (or one of blank lines) is a session with no events yet:
nothing is stored. Events are stored as written and may nest ${MAX_JSON_DEPTH} levels (the event object is
level 1). A line over the size limit stops the reading of its file there.

Atomic units: each session file, a stream, each journal operation is stored whole or not at
all. Importing the same data again stores nothing new; an event stored with a different body
is a conflict. Exit code 1 when any unit was rejected.`,
    )
    .action(async (source: string, options: { strict?: boolean; chunkSize: number } & Limits, command: Command) => {
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const [{ importLogs }, { EventStore }, { ProgressLine }] = await Promise.all([
        import('../../import/import-logs.js'),
        import('../../store/event-store.js'),
        import('../progress-line.js'),
      ]);
      const limits = resolveLimits(options, io.env);
      const progress = new ProgressLine(io.stderr, 'importing');
      const bytesTotal = progress.visible ? await sizeOfFile(source) : undefined;
      let report: ImportReport;
      try {
        report = await withDatabase(
          url,
          (db) =>
            importLogs(
              new EventStore(db),
              source,
              {
                strict: options.strict,
                ...limits,
                chunkSize: options.chunkSize,
                concurrency: IMPORT_CONCURRENCY,
                onProgress: (p) => showProgress(progress, p, bytesTotal),
              },
              io.stdin,
            ),
          { connections: IMPORT_CONCURRENCY, rideThrough: { io, rerun: 'connect' } },
        );
      } finally {
        progress.done();
      }
      for (const failure of report.failures) await write(io.stderr, `os-audit: ${failure.message}\n`);
      if (report.ignoredEntries.length > 0) await write(io.stderr, `${describeIgnored(report.ignoredEntries)}\n`);
      await write(
        io.stdout,
        `imported ${countOf(report.newEvents, 'new event')}; ${report.existingEvents} ${report.existingEvents === 1 ? 'was' : 'were'} already stored ` +
          `(${countOf(report.sessions, 'session')} from ${countOf(report.files, 'file')})\n`,
      );
      if (report.emptyLogs.length > 0) await write(io.stdout, `${describeEmptyLogs(report.emptyLogs)}\n`);
      if (report.journal !== undefined) await write(io.stdout, `${describeJournal(report.journal)}\n`);
      if (report.failures.length > 0) {
        const inputs = report.files + (report.journal?.operations ?? 0);
        throw new CliError(`${report.failures.length} of ${countOf(inputs, 'input')} rejected; nothing of them was stored`);
      }
    });
}

/** `2 empty logs (no events yet): s1, s2`, naming the first few. */
function describeEmptyLogs(sessionIds: readonly string[]): string {
  return `${countOf(sessionIds.length, 'empty log')} (no events yet): ${firstNames(sessionIds)}`;
}

/** `ignored 1 entry, not a <session_id>.jsonl file: older-format`, naming the first few. */
function describeIgnored(entries: readonly string[]): string {
  const what = entries.length === 1 ? 'not a <session_id>.jsonl file' : 'not <session_id>.jsonl files';
  return `ignored ${countOf(entries.length, 'entry', 'entries')}, ${what}: ${firstNames(entries)}`;
}

/** `a, b, c and 2 more`: the first {@link NAMES_SHOWN} names. */
function firstNames(names: readonly string[]): string {
  const more = names.length > NAMES_SHOWN ? ` and ${names.length - NAMES_SHOWN} more` : '';
  return `${names.slice(0, NAMES_SHOWN).join(', ')}${more}`;
}

/** `kernel journal: 2 operations; 5 new records (0 already stored), …`, the rarer counts only when there are some. */
function describeJournal(journal: JournalCounts): string {
  const parts = [
    `${countOf(journal.newRecords, 'new record')} (${journal.existingRecords} already stored)`,
    `${countOf(journal.newCheckpoints, 'new checkpoint')} (${journal.existingCheckpoints} already stored)`,
  ];
  if (journal.newAcknowledgements > 0) parts.push(countOf(journal.newAcknowledgements, 'new acknowledgement'));
  if (journal.newAnchors > 0) parts.push(countOf(journal.newAnchors, 'new pruned anchor'));
  if (journal.newOutboundEnvelopes > 0) parts.push(countOf(journal.newOutboundEnvelopes, 'new outbound envelope'));
  return `kernel journal: ${countOf(journal.operations, 'operation')}; ${parts.join(', ')}`;
}

/** Names listed in a summary line; a folder of thousands of empty logs must not flood the terminal. */
const NAMES_SHOWN = 10;

/** A bar over files for a directory, over bytes for a file; counts alone for standard input. */
function showProgress(progress: ProgressLine, p: ImportProgress, bytesTotal: number | undefined): void {
  const events = `${countOf(p.newEvents + p.existingEvents, 'event')} (${p.newEvents} new)`;
  const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
  if (p.filesTotal > 1) progress.update(p.filesDone, p.filesTotal, `${p.filesDone}/${p.filesTotal} files, ${events}, ${mib(p.bytesRead)} MiB`);
  else if (bytesTotal !== undefined) progress.update(p.bytesRead, bytesTotal, `${mib(p.bytesRead)}/${mib(bytesTotal)} MiB, ${events}`);
  else progress.update(p.bytesRead, undefined, `${events}, ${mib(p.bytesRead)} MiB`);
}

/** The size of `source` when it is a regular file (not standard input, not a directory). */
async function sizeOfFile(source: string): Promise<number | undefined> {
  if (source === '-') return undefined;
  const stats = await fs.stat(source).catch(() => undefined);
  return stats?.isFile() ? stats.size : undefined;
}
