import type { Command } from 'commander';
import { importLogs, type ImportProgress } from '../../import/import-logs.js';
import { DEFAULT_CHUNK_SIZE } from '../../import/log-writer.js';
import { EventStore } from '../../store/event-store.js';
import { integerOption } from '../parse-integer-option.js';
import { type CliIo, CliError, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';
import { ProgressLine } from '../progress-line.js';

/** Files of a directory stored at once (and database connections to do it). */
const IMPORT_CONCURRENCY = 4;

export function registerImportCommand(program: Command, io: CliIo): void {
  program
    .command('import')
    .description(
      'import session logs: a directory of <session_id>.jsonl files ({"seq":N,"event":{...}} per line), ' +
        'or one JSONL stream of {"session_id":...,"seq":N,"event":{...}} lines (a file, or - for stdin)',
    )
    .argument('<path>', 'a directory, a .jsonl file, or - for standard input')
    .option('--strict', 'refuse event kinds the contract does not name')
    .option('--chunk-size <events>', 'events per database write', integerOption(1), DEFAULT_CHUNK_SIZE)
    .addHelpText(
      'after',
      '\nAtomic units: each file of a directory is stored whole or not at all; a stream is stored whole or\n' +
        'not at all. Importing the same data again stores nothing new; an event stored with a different\n' +
        'body is a conflict. Exit code 1 when any unit was rejected.',
    )
    .action(async (source: string, options: { strict?: boolean; chunkSize: number }, command: Command) => {
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const progress = new ProgressLine(io.stderr);
      const report = await withDatabase(
        url,
        (db) =>
          importLogs(
            new EventStore(db),
            source,
            { strict: options.strict, chunkSize: options.chunkSize, concurrency: IMPORT_CONCURRENCY, onProgress: (p) => progress.update(describeProgress(p)) },
            io.stdin,
          ),
        IMPORT_CONCURRENCY,
      );
      progress.done();
      for (const failure of report.failures) await write(io.stderr, `os-audit: ${failure.message}\n`);
      if (report.ignoredEntries.length > 0) {
        await write(io.stderr, `ignored ${report.ignoredEntries.length} entries that are not *.jsonl files\n`);
      }
      await write(
        io.stdout,
        `imported ${report.newEvents} new events; ${report.existingEvents} were already stored ` +
          `(${report.sessions} sessions from ${report.files} ${report.files === 1 ? 'file' : 'files'})\n`,
      );
      if (report.failures.length > 0) {
        throw new CliError(`${report.failures.length} of ${report.files} inputs rejected; nothing of them was stored`);
      }
    });
}

function describeProgress(progress: ImportProgress): string {
  const files = progress.filesTotal > 1 ? ` — file ${progress.filesDone}/${progress.filesTotal}` : '';
  const mib = (progress.bytesRead / 2 ** 20).toFixed(1);
  return `importing: ${progress.newEvents + progress.existingEvents} events (${progress.newEvents} new), ${mib} MiB${files}`;
}
