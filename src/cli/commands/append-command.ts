// fs.promises, read when used: loading node:fs/promises at every command's start costs a millisecond or two.
import { promises as fs } from 'node:fs';
import type { Readable } from 'node:stream';
import type { Command } from 'commander';
import { readEventLines } from '../../import/event-lines.js';
import type { JsonValue } from '../../json/json-value.js';
import { MAX_JSON_DEPTH, parseJson, parseJsonArrayKeepingItems } from '../../json/parse-json.js';
import { ConcurrencyError } from '../../store/concurrency-error.js';
import { type EventOrigin, InvalidEventError } from '../../events/invalid-event-error.js';
import { EVENT_LIMIT_HINT, type Limits, maxLineBytes } from '../../events/limits.js';
import { resolveLimits, withLimitOptions } from '../limit-options.js';
import { integerOption } from '../parse-integer-option.js';
import { type CliIo, CliError, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';
import { countOf } from '../../text/count-of.js';

interface AppendCommandOptions extends Limits {
  expectedSeq?: number;
  strict?: boolean;
}

export function registerAppendCommand(program: Command, io: CliIo): void {
  withLimitOptions(program.command('append'))
    .description('append events to the end of a session log, all or nothing')
    .argument('<session>', 'the session id')
    .argument('[file]', 'a JSON array or JSONL of bare events; - or nothing for standard input')
    .option('--expected-seq <seq>', 'refuse unless the log ends at this seq (-1: the session is new)', integerOption(-1))
    .option('--strict', 'refuse event kinds the contract does not name')
    .addHelpText(
      'after',
      `
Each event is a JSON object with a non-empty string "kind", one per line (JSONL) or all in one
JSON array. It is stored as written, white space between tokens removed: key order, number text
(1e2, -0.0, 18446744073709551615) and escapes stay as they are. An event may nest ${MAX_JSON_DEPTH} levels
(the event object is level 1). A JSON array is read whole: it may be as large as one event.
All or nothing: a refused event is named by file and line, and none of the input is appended;
a line over the size limit stops the reading there.`,
    )
    .action(async (sessionId: string, file: string | undefined, options: AppendCommandOptions, command: Command) => {
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const [{ EventStore }, { LogWriter }, { checkSessionId, encodeEventText }] = await Promise.all([
        import('../../store/event-store.js'),
        import('../../import/log-writer.js'),
        import('../../events/encode-event.js'),
      ]);
      const limits = resolveLimits(options, io.env);
      const encodeOptions = { strict: options.strict, ...limits };
      const name = file === undefined || file === '-' ? '<stdin>' : file;
      // Opened before connecting: a wrong path is one line, not an error event on a stream nobody reads yet.
      const input = name === '<stdin>' ? io.stdin : await openEventFile(name);
      const appended = await withDatabase(url, (db) =>
        new EventStore(db).transaction(async (store) => {
          checkSessionId(sessionId, {}, limits);
          const head = await store.lastSeq(sessionId, { lock: true });
          if (options.expectedSeq !== undefined && options.expectedSeq !== head) {
            throw new ConcurrencyError(sessionId, options.expectedSeq, head);
          }
          const writer = new LogWriter(store);
          let seq = head;
          for await (const { text, value, origin } of readBareEvents(input, name, sessionId, limits)) {
            seq += 1;
            const at = { ...origin, seq };
            await writer.add(sessionId, seq, encodeEventText(text, at, encodeOptions, value), at);
          }
          await writer.finish();
          return { first: head + 1, last: seq };
        }),
        { rideThrough: { io, rerun: 'connect' } },
      ).catch(rethrowAsCliError);
      const summary =
        appended.last < appended.first
          ? 'no events in the input; nothing appended\n'
          : `appended ${countOf(appended.last - appended.first + 1, 'event')} to ${JSON.stringify(sessionId)} ` +
            `as ${appended.last === appended.first ? `seq ${appended.first}` : `seqs ${appended.first}..${appended.last}`}\n`;
      await write(io.stdout, summary);
    });
}

/** Events of a JSON array (read whole) or of JSONL (streamed), each with its text and where it stands. */
async function* readBareEvents(
  input: Readable,
  name: string,
  sessionId: string,
  limits: Limits,
): AsyncGenerator<{ text: string; value: JsonValue; origin: EventOrigin }> {
  let isArray: boolean | undefined;
  const array: ArrayText = { text: '', lineNumbers: [] };
  const maxArrayBytes = maxLineBytes(limits);
  for await (const lines of readEventLines(input, { file: name, sessionId }, limits)) {
    for (const line of lines) {
      const origin = { file: name, line: line.lineNumber, sessionId };
      isArray ??= line.text.trimStart().startsWith('[');
      if (isArray) {
        // Held whole until it is parsed: bounded as one line is.
        if (line.bytesRead > maxArrayBytes) {
          throw new InvalidEventError(origin, `the JSON array is longer than ${maxArrayBytes} bytes, more than one event may be; write JSONL to append more (${EVENT_LIMIT_HINT})`);
        }
        array.text += `${line.text}\n`;
        array.lineNumbers.push(line.lineNumber);
        continue;
      }
      yield { text: line.text, value: InvalidEventError.parsing(() => parseJson(line.text), origin), origin };
    }
  }
  if (isArray) yield* eventsOfArray(array, name, sessionId);
}

/** A JSON array's text, and the input's number of each of its lines (blank lines are not in it). */
interface ArrayText {
  text: string;
  lineNumbers: number[];
}

function* eventsOfArray(array: ArrayText, name: string, sessionId: string) {
  const inputLine = (lineInText: number) => array.lineNumbers[Math.min(lineInText, array.lineNumbers.length) - 1];
  const parsed = InvalidEventError.parsing(() => parseJsonArrayKeepingItems(array.text), (error) => ({ file: name, line: inputLine(error.line), sessionId }));
  if ('notAnArray' in parsed) throw new InvalidEventError({ file: name, sessionId }, 'expected a JSON array of events');
  let lineInText = 1;
  let scanned = 0;
  for (const [index, item] of parsed.items.entries()) {
    for (; scanned < item.offset; scanned++) if (array.text.charCodeAt(scanned) === 0x0a) lineInText++;
    yield { text: item.text, value: item.value, origin: { file: name, line: inputLine(lineInText), sessionId, index } };
  }
}

/** A file of events to read, refused at once when it is missing, unreadable or a directory. */
async function openEventFile(name: string): Promise<Readable> {
  const file = await fs.open(name);
  if ((await file.stat()).isDirectory()) {
    await file.close();
    throw new CliError(`${name} is a directory: give a file of events, or - for standard input`);
  }
  return file.createReadStream();
}

function rethrowAsCliError(error: unknown): never {
  if (error instanceof InvalidEventError || error instanceof ConcurrencyError) {
    throw new CliError(`${error.message}; nothing was appended`);
  }
  throw error;
}
