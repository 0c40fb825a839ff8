import { createReadStream, type Dirent, promises as fs } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { retryOnConnectionLoss } from '../db/retry-on-connection-loss.js';
import { isJsonObject } from '../json/json-value.js';
import { JsonParseError, parseJsonKeepingMember } from '../json/parse-json.js';
import { ConcurrencyError } from '../store/concurrency-error.js';
import { checkSessionId, type EncodeOptions } from '../events/encode-event.js';
import type { EventStore } from '../store/event-store.js';
import { type Limits, maxLineBytes } from '../events/limits.js';
import { InvalidEventError } from '../events/invalid-event-error.js';
import { KERNEL_JOURNAL_DIR } from './file-kernel-journal.js';
import { importKernelJournal, type JournalCounts } from './import-kernel-journal.js';
import { DEFAULT_CHUNK_SIZE } from './default-chunk-size.js';
import { LogWriter, MAX_CHUNK_CHARS, type WriteCounts } from './log-writer.js';
import { type EventLine, readEventLine } from './event-line.js';
import { readEventLines } from './event-lines.js';
import { InvalidUtf8Error, LineTooLongError, readLines } from './read-lines.js';

export interface ImportOptions extends EncodeOptions {
  /** Events per write; bounds memory. Default 2000. */
  chunkSize?: number;
  /** Files of a directory imported at once; default 4. The store's pool needs as many connections. */
  concurrency?: number;
  /** Called after each stored chunk and each finished file. */
  onProgress?: (progress: ImportProgress) => void;
}

export interface ImportProgress extends WriteCounts {
  bytesRead: number;
  filesDone: number;
  filesTotal: number;
}

/** A unit of the input that was rejected; nothing of it was stored. */
export interface ImportFailure {
  source: string;
  message: string;
}

export interface ImportReport extends WriteCounts {
  /** Sessions with events that were read from the input, whether new or already stored. */
  sessions: number;
  files: number;
  /** Sessions whose log file holds no event yet (it is empty, or blank lines only): nothing is stored for them. */
  emptyLogs: string[];
  failures: ImportFailure[];
  /** Entries of an imported directory that are neither `*.jsonl` files nor its kernel journal's. */
  ignoredEntries: string[];
  /** What the directory's `kernel-journal/` folder held, when it has one. */
  journal?: JournalCounts;
}

/**
 * Imports the runtime's logs from `source`. That is a directory of `<session_id>.jsonl` files
 * (each line `{"seq": N, "event": {…}}`), or one such file. Or it is one JSONL stream (a file,
 * or `-` for standard input) whose lines are `{"session_id": "…", "seq": N, "event": {…}}`.
 * Symbolic links are followed.
 *
 * Atomic units: a session's file is stored whole or not at all (a bad file of a directory is
 * reported and the others go on); a stream is stored whole or not at all. Importing the same
 * data again stores nothing new.
 *
 * @example
 * ```ts
 * const report = await importLogs(store, 'logs/');
 * console.log(`${report.newEvents} new events`);
 * ```
 */
export async function importLogs(
  store: EventStore,
  source: string,
  options: ImportOptions = {},
  stdin: Readable = process.stdin,
): Promise<ImportReport> {
  if (source === '-') return importStream(store, stdin, '<stdin>', options);
  const stat = await fs.stat(source);
  if (stat.isDirectory()) return importDirectory(store, source, options);
  return importFile(store, source, options);
}

/**
 * Imports one file: a session's log named `<session_id>.jsonl` (`{"seq", "event"}` lines), or a
 * stream (`{"session_id", "seq", "event"}` lines), told apart by its first non-blank line: a
 * `session_id` there makes it a stream. A file of blank lines only (or none) is a session with
 * no events yet when it is named `<session_id>.jsonl`: nothing is stored.
 */
async function importFile(store: EventStore, file: string, options: ImportOptions = {}): Promise<ImportReport> {
  const format = await formatOf(file, options);
  const sessionId = sessionIdOfFile(file);
  if (format === 'stream' || (format === 'empty' && sessionId === undefined)) return importStream(store, createReadStream(file), file, options);
  const report: ImportReport = { ...emptyReport(), files: 1 };
  try {
    if (sessionId === undefined) {
      throw new InvalidEventError({ file }, 'its lines are one session\'s log ({"seq", "event"}): name it <session_id>.jsonl, or give each line a "session_id"');
    }
    checkSessionId(sessionId, { file }, options);
    if (format === 'empty') {
      report.emptyLogs.push(sessionId);
    } else {
      const onChunk = (counts: WriteCounts, bytesRead: number) => options.onProgress?.({ ...counts, bytesRead, filesDone: 0, filesTotal: 1 });
      const counts = await importSessionFile(store, { index: 0, path: file, sessionId, bytes: 0 }, options, onChunk);
      report.newEvents = counts.newEvents;
      report.existingEvents = counts.existingEvents;
      report.sessions = 1;
    }
  } catch (error) {
    if (!isInputError(error)) throw error;
    report.failures.push({ source: file, message: error.message });
  }
  return report;
}

/**
 * How a file's first non-blank line says to read it. A line that is not a JSON object, or is
 * too long to read, cannot tell. It is read as a stream's, whose import names its file and line
 * only: naming the file's session would guess the format.
 */
async function formatOf(file: string, limits: Limits): Promise<'session' | 'stream' | 'empty'> {
  let first: string | undefined;
  try {
    for await (const lines of readLines(createReadStream(file), { maxLineBytes: maxLineBytes(limits) })) {
      first = lines[0]!.text;
      break;
    }
  } catch (error) {
    if (error instanceof InvalidUtf8Error || error instanceof LineTooLongError) return 'stream';
    throw error;
  }
  if (first === undefined) return 'empty';
  let value;
  try {
    // As an envelope: its event may nest as deep as one given alone.
    value = parseJsonKeepingMember(first, 'event').value;
  } catch (error) {
    if (error instanceof JsonParseError) return 'stream';
    throw error;
  }
  return isJsonObject(value) && !('session_id' in value) ? 'session' : 'stream';
}

/** The session a `<session_id>.jsonl` file holds, by its name (a symbolic link's own name, not its target's). */
function sessionIdOfFile(file: string): string | undefined {
  const name = path.basename(file);
  return name.endsWith(SESSION_FILE_SUFFIX) ? name.slice(0, -SESSION_FILE_SUFFIX.length) : undefined;
}

const SESSION_FILE_SUFFIX = '.jsonl';

/**
 * Imports a log folder: its `<session_id>.jsonl` files and, when it has a `kernel-journal/`
 * folder (a v0.2.60 SDK's), its kernel journal (see `importKernelJournal`), each operation of
 * which is an atomic unit too.
 */
export async function importDirectory(store: EventStore, directory: string, options: ImportOptions = {}): Promise<ImportReport> {
  const report = await importSessionFiles(store, directory, options);
  const journalDir = path.join(directory, KERNEL_JOURNAL_DIR);
  if (report.ignoredEntries.includes(KERNEL_JOURNAL_DIR) && (await fs.stat(journalDir).catch(() => undefined))?.isDirectory()) {
    const { failures, ignoredEntries, ...counts } = await importKernelJournal(store.db, journalDir, options);
    report.journal = counts;
    report.failures.push(...failures);
    report.ignoredEntries = [
      ...report.ignoredEntries.filter((name) => name !== KERNEL_JOURNAL_DIR),
      ...ignoredEntries.map((name) => path.join(KERNEL_JOURNAL_DIR, name)),
    ];
  }
  return report;
}

/**
 * Imports the `<session_id>.jsonl` files of a directory. Each file is its own atomic unit.
 * Small files are read and checked first, then stored a group at a time, one transaction per
 * group of about `chunkSize` events. A group the database refuses is stored again file by file,
 * so a bad file never takes its neighbours down. A file larger than that is streamed in its own
 * transaction. Up to `concurrency` groups are stored at once, while the next ones are read.
 * A file without events is reported in `emptyLogs`; a symbolic link is followed, and one that
 * leads to no file is refused.
 */
async function importSessionFiles(store: EventStore, directory: string, options: ImportOptions): Promise<ImportReport> {
  const { files, ignoredEntries } = await sessionFilesOf(directory);
  const report = emptyReport();
  report.ignoredEntries = ignoredEntries;
  report.files = files.length;
  const chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE;
  const failures: (ImportFailure | undefined)[] = [];
  let bytesRead = 0;
  let filesDone = 0;

  const finished: Finished = (done, outcome) => {
    if (outcome instanceof Error) {
      failures[done[0]!.index] = { source: done[0]!.path, message: outcome.message };
    } else if (outcome === 'empty') {
      report.emptyLogs.push(done[0]!.sessionId);
    } else {
      report.sessions += done.length;
      report.newEvents += outcome.newEvents;
      report.existingEvents += outcome.existingEvents;
    }
    for (const file of done) bytesRead += file.bytes;
    filesDone += done.length;
    options.onProgress?.({ ...countsOf(report), bytesRead, filesDone, filesTotal: files.length });
  };
  const storing = new StoringQueue(options.concurrency ?? DEFAULT_CONCURRENCY);
  let group: ReadFile[] = [];
  let groupEvents = 0;
  let groupBytes = 0;

  for (const file of files) {
    const read =
      file.refusal !== undefined
        ? new InvalidEventError({ file: file.path }, file.refusal)
        : await readSessionFile(file, options, chunkSize).catch((error: unknown) => {
            if (!isInputError(error)) throw error;
            return error;
          });
    if (read instanceof Error) {
      finished([file], read);
    } else if (read === 'too large') {
      await storing.add(() => importSessionFile(store, file, options).then((counts) => finished([file], counts), failedInput(file, finished)));
    } else if (read.events.length === 0) {
      finished([file], 'empty');
    } else {
      group.push(read);
      groupEvents += read.events.length;
      groupBytes += read.bytes;
      if (groupEvents >= chunkSize || groupBytes >= MAX_CHUNK_CHARS) {
        const full = group;
        await storing.add(() => storeGroup(store, full, finished));
        group = [];
        groupEvents = 0;
        groupBytes = 0;
      }
    }
  }
  if (group.length > 0) await storing.add(() => storeGroup(store, group, finished));
  await storing.drain();
  report.failures = failures.filter((failure) => failure !== undefined);
  return report;
}

/** The `*.jsonl` entries of a directory, by name, and the names of the other entries. */
export async function sessionFilesOf(directory: string): Promise<{ files: SessionFile[]; ignoredEntries: string[] }> {
  const entries = (await fs.readdir(directory, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
  const files: SessionFile[] = [];
  const ignoredEntries: string[] = [];
  for (const entry of entries) {
    const sessionId = sessionIdOfFile(entry.name);
    if (sessionId === undefined || !(entry.isFile() || entry.isSymbolicLink())) {
      ignoredEntries.push(entry.name);
      continue;
    }
    const filePath = path.join(directory, entry.name);
    files.push({ index: files.length, path: filePath, sessionId, bytes: 0, refusal: await whyNotAFile(filePath, entry) });
  }
  return { files, ignoredEntries };
}

/** Why an entry is no file to read (a symbolic link is followed), or undefined when it is one. */
async function whyNotAFile(entryPath: string, entry: Dirent): Promise<string | undefined> {
  if (entry.isFile()) return undefined;
  const target = await fs.stat(entryPath).catch((error: NodeJS.ErrnoException) => error);
  if (target instanceof Error) {
    return target.code === 'ENOENT' ? 'a broken symbolic link: its target does not exist' : `cannot follow the symbolic link (${target.code ?? target.message})`;
  }
  if (target.isDirectory()) return 'a symbolic link to a directory, not to a session\'s log file';
  return target.isFile() ? undefined : 'a symbolic link to something that is not a file';
}

/** Files stored at once by default: enough to overlap reading with the database's work. */
const DEFAULT_CONCURRENCY = 4;

/** Reports files stored together (with their counts), one file refused (with why) or one without events. */
type Finished = (files: readonly SessionFile[], outcome: WriteCounts | Error | 'empty') => void;

/** A `<session_id>.jsonl` entry of a log folder, as {@link sessionFilesOf} lists it. */
export interface SessionFile {
  index: number;
  path: string;
  sessionId: string;
  bytes: number;
  /** Why the entry cannot be read, found when it was listed. */
  refusal?: string;
}

interface ReadFile extends SessionFile {
  events: EventLine[];
}

/** Reads and checks a whole file, or says it holds more than `maxEvents` or {@link MAX_CHUNK_CHARS} bytes (to be streamed). */
async function readSessionFile(file: SessionFile, options: ImportOptions, maxEvents: number): Promise<ReadFile | 'too large'> {
  checkSessionId(file.sessionId, { file: file.path }, options);
  const read: ReadFile = { ...file, events: [] };
  for await (const chunk of sessionFileEvents(file, options)) {
    read.events.push(...chunk.events);
    read.bytes = chunk.bytesRead;
    if (read.events.length > maxEvents || read.bytes > MAX_CHUNK_CHARS) return 'too large';
  }
  file.bytes = read.bytes;
  return read;
}

/**
 * Stores a group of read files in one transaction, or, when it is refused, file by file. A
 * lost connection stores it again from the start: what the lost transaction may have stored is
 * then found stored, and counted as existing.
 */
async function storeGroup(store: EventStore, group: readonly ReadFile[], finished: Finished): Promise<void> {
  try {
    const counts = await retryOnConnectionLoss(() => store.transaction(async (transaction) => {
      const writer = new LogWriter(transaction, Number.POSITIVE_INFINITY);
      for (const file of group) {
        for (const { seq, event, origin } of file.events) await writer.add(file.sessionId, seq, event, origin);
      }
      return writer.finish();
    }));
    finished(group, counts);
  } catch (error) {
    if (!isInputError(error)) throw error;
    if (group.length === 1) return finished(group, error);
    for (const file of group) await storeGroup(store, [file], finished);
  }
}

/**
 * A session's file streamed into its own transaction, a chunk at a time (a file of a directory
 * too large to hold, or one given alone); `onChunk` is told after each chunk of lines.
 */
async function importSessionFile(
  store: EventStore,
  file: SessionFile,
  options: ImportOptions,
  onChunk?: (counts: WriteCounts, bytesRead: number) => void,
): Promise<WriteCounts> {
  // The file is read again from its start after a lost connection (see storeGroup).
  return retryOnConnectionLoss(() =>
    store.transaction(async (transaction) => {
      const writer = new LogWriter(transaction, options.chunkSize);
      for await (const chunk of sessionFileEvents(file, options)) {
        for (const { seq, event, origin } of chunk.events) await writer.add(file.sessionId, seq, event, origin);
        file.bytes = chunk.bytesRead;
        onChunk?.(writer.counts, chunk.bytesRead);
      }
      return writer.finish();
    }),
  );
}

/** The events of a `<session_id>.jsonl` file, each checked and encoded, a chunk of lines at a time. */
export async function* sessionFileEvents(file: SessionFile, options: EncodeOptions): AsyncGenerator<{ events: EventLine[]; bytesRead: number }> {
  for await (const lines of readEventLines(createReadStream(file.path), { file: file.path, sessionId: file.sessionId }, options)) {
    const events = lines.map((line) => readEventLine(line.text, { file: file.path, line: line.lineNumber, sessionId: file.sessionId }, options));
    yield { events, bytesRead: lines[lines.length - 1]!.bytesRead };
  }
}

function failedInput(file: SessionFile, finished: Finished) {
  return (error: unknown) => {
    if (!isInputError(error)) throw error;
    finished([file], error);
  };
}

/**
 * Runs tasks with at most `limit` at a time: `add` waits for a free place. The first task that
 * fails fails `add` or `drain`, after the tasks under way have settled.
 */
class StoringQueue {
  private readonly running = new Set<Promise<void>>();
  private failure: { error: unknown } | undefined;

  constructor(private readonly limit: number) {}

  async add(task: () => Promise<void>): Promise<void> {
    this.throwIfFailed();
    const promise: Promise<void> = task()
      .catch((error: unknown) => {
        this.failure ??= { error };
      })
      .finally(() => this.running.delete(promise));
    this.running.add(promise);
    if (this.running.size >= this.limit) await Promise.race(this.running);
    this.throwIfFailed();
  }

  async drain(): Promise<void> {
    await Promise.all(this.running);
    this.throwIfFailed();
  }

  private throwIfFailed(): void {
    if (this.failure !== undefined) throw this.failure.error;
  }
}

/** Imports one JSONL stream of `{"session_id", "seq", "event"}` lines in one transaction. */
export async function importStream(
  store: EventStore,
  input: Readable,
  name: string,
  options: ImportOptions = {},
): Promise<ImportReport> {
  const report = emptyReport();
  report.files = 1;
  const sessions = new Set<string>();
  try {
    const counts = await store.transaction(async (transaction) => {
      const writer = new LogWriter(transaction, options.chunkSize);
      let lastReported = writer.counts.newEvents + writer.counts.existingEvents;
      for await (const lines of readEventLines(input, { file: name }, options)) {
        for (const line of lines) {
          const { sessionId, seq, event, origin } = readEventLine(line.text, { file: name, line: line.lineNumber }, options);
          sessions.add(sessionId);
          await writer.add(sessionId, seq, event, origin);
        }
        const done = writer.counts.newEvents + writer.counts.existingEvents;
        if (done !== lastReported) {
          lastReported = done;
          options.onProgress?.({ ...writer.counts, bytesRead: lines[lines.length - 1]!.bytesRead, filesDone: 0, filesTotal: 1 });
        }
      }
      return writer.finish();
    });
    report.newEvents = counts.newEvents;
    report.existingEvents = counts.existingEvents;
    report.sessions = sessions.size;
  } catch (error) {
    if (!isInputError(error)) throw error;
    report.failures.push({ source: name, message: error.message });
  }
  return report;
}

/** Errors about the input, reported per unit; anything else (the database down…) stops the import. */
function isInputError(error: unknown): error is Error {
  return error instanceof InvalidEventError || error instanceof ConcurrencyError;
}

function emptyReport(): ImportReport {
  return { newEvents: 0, existingEvents: 0, sessions: 0, files: 0, emptyLogs: [], failures: [], ignoredEntries: [] };
}

function countsOf(report: ImportReport): WriteCounts {
  return { newEvents: report.newEvents, existingEvents: report.existingEvents };
}
