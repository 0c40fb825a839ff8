import { createReadStream, promises as fs } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { isJsonObject, JsonFloat, type JsonObject } from '../json/json-value.js';
import { JsonParseError, parseJson } from '../json/parse-json.js';
import { ConcurrencyError } from '../store/concurrency-error.js';
import { checkSessionId, type EncodeOptions, encodeEvent } from '../store/encode-event.js';
import type { EventStore } from '../store/event-store.js';
import { type EventOrigin, InvalidEventError } from '../store/invalid-event-error.js';
import { LogWriter, type WriteCounts } from './log-writer.js';
import { InvalidUtf8Error, readLines } from './read-lines.js';

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
  /** Sessions that were read from the input, whether new or already stored. */
  sessions: number;
  files: number;
  failures: ImportFailure[];
  /** Entries of an imported directory that are not `*.jsonl` files. */
  ignoredEntries: string[];
}

/**
 * Imports the runtime's logs from `source`: a directory of `<session_id>.jsonl` files (each line
 * `{"seq": N, "event": {…}}`), or one JSONL stream (a file, or `-` for standard input) whose
 * lines are `{"session_id": "…", "seq": N, "event": {…}}`.
 *
 * Atomic units: a file of a directory is stored whole or not at all (a bad file is reported
 * and the others go on); a stream is stored whole or not at all. Importing the same data again
 * stores nothing new.
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
  return importStream(store, createReadStream(source), source, options);
}

/**
 * Imports a directory of `<session_id>.jsonl` files, one transaction per file, several files
 * at a time (`concurrency`), so that reading one file overlaps with storing another.
 */
export async function importDirectory(store: EventStore, directory: string, options: ImportOptions = {}): Promise<ImportReport> {
  const entries = (await fs.readdir(directory, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
  const files = entries.filter((entry) => entry.isFile() && entry.name.endsWith('.jsonl'));
  const report = emptyReport();
  report.ignoredEntries = entries.filter((entry) => !files.includes(entry)).map((entry) => entry.name);
  report.files = files.length;
  let bytesRead = 0;
  let filesDone = 0;
  const failures: (ImportFailure | undefined)[] = [];

  await forEachConcurrently(files, options.concurrency ?? DEFAULT_CONCURRENCY, async (file, index) => {
    const filePath = path.join(directory, file.name);
    try {
      const result = await importSessionFile(store, filePath, file.name.slice(0, -'.jsonl'.length), options);
      report.sessions += 1;
      report.newEvents += result.counts.newEvents;
      report.existingEvents += result.counts.existingEvents;
      bytesRead += result.fileBytes;
    } catch (error) {
      if (!isInputError(error)) throw error;
      failures[index] = { source: filePath, message: error.message };
    }
    filesDone += 1;
    options.onProgress?.({ ...countsOf(report), bytesRead, filesDone, filesTotal: files.length });
  });
  report.failures = failures.filter((failure) => failure !== undefined);
  return report;
}

/** Files imported at once by default: enough to overlap parsing with the database's work. */
const DEFAULT_CONCURRENCY = 4;

async function importSessionFile(store: EventStore, filePath: string, sessionId: string, options: ImportOptions) {
  return store.transaction(async (transaction) => {
    checkSessionId(sessionId, { file: filePath });
    const writer = new LogWriter(transaction, options.chunkSize);
    let fileBytes = 0;
    for await (const lines of linesOf(createReadStream(filePath), filePath)) {
      for (const line of lines) {
        const origin: EventOrigin = { file: filePath, line: line.lineNumber, sessionId };
        const envelope = parseEnvelope(line.text, origin, ['seq', 'event']);
        const seq = readSeq(envelope, origin);
        await writer.add(sessionId, seq, encodeEvent(envelope.event!, { ...origin, seq }, options), { ...origin, seq });
        fileBytes = line.bytesRead;
      }
    }
    await writer.flush();
    return { counts: writer.counts, fileBytes };
  });
}

/** Runs `work` over `items` with at most `limit` at a time; the first error stops the rest. */
async function forEachConcurrently<T>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      await work(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
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
      for await (const lines of linesOf(input, name)) {
        for (const line of lines) {
          const origin: EventOrigin = { file: name, line: line.lineNumber };
          const envelope = parseEnvelope(line.text, origin, ['session_id', 'seq', 'event']);
          const sessionId = checkSessionId(envelope.session_id, origin);
          const seq = readSeq(envelope, { ...origin, sessionId });
          const eventOrigin = { ...origin, sessionId, seq };
          sessions.add(sessionId);
          await writer.add(sessionId, seq, encodeEvent(envelope.event!, eventOrigin, options), eventOrigin);
        }
        const done = writer.counts.newEvents + writer.counts.existingEvents;
        if (done !== lastReported) {
          lastReported = done;
          options.onProgress?.({ ...writer.counts, bytesRead: lines[lines.length - 1]!.bytesRead, filesDone: 0, filesTotal: 1 });
        }
      }
      await writer.flush();
      return writer.counts;
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

/** The input's lines, a chunk at a time; a line that is not UTF-8 is an input error. */
async function* linesOf(input: Readable, name: string) {
  try {
    yield* readLines(input);
  } catch (error) {
    if (error instanceof InvalidUtf8Error) {
      throw new InvalidEventError({ file: name, line: error.lineNumber }, 'not valid UTF-8 (nothing is stored with a replaced character)');
    }
    throw error;
  }
}

function parseEnvelope(text: string, origin: EventOrigin, fields: readonly string[]): JsonObject {
  let value;
  try {
    value = parseJson(text);
  } catch (error) {
    if (error instanceof JsonParseError) throw new InvalidEventError(origin, `invalid JSON: ${error.message}`);
    throw error;
  }
  const shape = `{${fields.map((field) => JSON.stringify(field)).join(', ')}}`;
  if (!isJsonObject(value)) throw new InvalidEventError(origin, `expected a JSON object ${shape}`);
  for (const field of fields) {
    if (!(field in value)) throw new InvalidEventError(origin, `field "${field}" is missing (a line is ${shape})`);
  }
  for (const key of Object.keys(value)) {
    if (!fields.includes(key)) throw new InvalidEventError(origin, `unexpected field "${key}" (a line is ${shape})`);
  }
  return value;
}

function readSeq(envelope: JsonObject, origin: EventOrigin): number {
  const seq = envelope.seq;
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0) {
    throw new InvalidEventError(origin, `field "seq": expected an integer from 0, got ${describeValue(seq)}`);
  }
  return seq;
}

function describeValue(value: unknown): string {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof JsonFloat) return value.text;
  return JSON.stringify(value) ?? String(value);
}

/** Errors about the input, reported per unit; anything else (the database down…) stops the import. */
function isInputError(error: unknown): error is Error {
  return error instanceof InvalidEventError || error instanceof ConcurrencyError;
}

function emptyReport(): ImportReport {
  return { newEvents: 0, existingEvents: 0, sessions: 0, files: 0, failures: [], ignoredEntries: [] };
}

function countsOf(report: ImportReport): WriteCounts {
  return { newEvents: report.newEvents, existingEvents: report.existingEvents };
}
