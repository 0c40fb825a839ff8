import { describeJsonValue, quoteString } from '../json/describe-json-value.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../json/json-value.js';
import { JsonParseError, parseJson } from '../json/parse-json.js';
import { scanJsonObject } from '../json/scan-json.js';
import { replaceUnstorableChars } from '../json/storable-json.js';
import { CorruptEventError } from './corrupt-event-error.js';
import type { StoredEventText } from './stored-event.js';

/**
 * A stored event's text read as an event with `parse` (`parseJson` by default, or `JSON.parse`).
 * Throws a {@link CorruptEventError} naming its session and seq when the text is not JSON, not
 * a JSON object, or not of its row's kind. So a reader never gets a bare `SyntaxError`, nor a
 * value that is no event.
 *
 * @example
 * ```ts
 * for await (const stored of store.readSessionText('session-1')) console.log(readStoredEvent(stored).kind);
 * // throws CorruptEventError: session "session-1", seq 2: the stored event is not JSON: unexpected character 'o' at column 2
 * ```
 */
export function readStoredEvent<Event extends object = JsonObject>(stored: StoredEventText, parse: (text: string) => unknown = parseJson): Event {
  const corrupt = (problem: string, cause?: unknown) => new CorruptEventError(stored.sessionId, stored.seq, problem, { cause });
  let event: JsonValue;
  try {
    event = parse(stored.text) as JsonValue;
  } catch (error) {
    if (!(error instanceof SyntaxError || error instanceof JsonParseError)) throw error;
    // Too deep a text is JSON, which os-audit reads no deeper (as InvalidEventError.fromJsonParse says).
    const tooDeep = error instanceof JsonParseError && error.code === 'too_deep';
    throw corrupt(tooDeep ? `the stored event has ${error.message}` : `the stored event is not JSON: ${error.message}`, error);
  }
  if (!isJsonObject(event)) throw corrupt(`the stored event is not a JSON object: it is ${describeJsonValue(event)}`);
  const kind = Object.hasOwn(event, 'kind') ? event.kind : undefined;
  if (kind === undefined) throw corrupt(`the stored event has no kind (its row's is ${quoteString(stored.kind)})`);
  // The row's kind has U+FFFD for a character PostgreSQL's text cannot hold.
  if (typeof kind !== 'string' || replaceUnstorableChars(kind) !== stored.kind) {
    throw corrupt(`the stored event's kind is ${describeJsonValue(kind)}, not its row's ${quoteString(stored.kind)}`);
  }
  return event as Event;
}

/**
 * Checks that a stored event's text is what {@link readStoredEvent} reads as an event, without
 * building it when a scan can tell (see `scanJsonObject`): for printing stored texts as they are.
 * Throws the same {@link CorruptEventError}.
 *
 * @example
 * ```ts
 * for await (const stored of store.readSessionText('session-1')) {
 *   checkStoredEvent(stored);
 *   console.log(stored.text);
 * }
 * ```
 */
export function checkStoredEvent(stored: StoredEventText): void {
  // No member is looked into: only the event's own `kind` is compared, as written.
  const kind = scanJsonObject(stored.text, 'kind', [])?.members.find((member) => member.key === 'kind');
  if (kind !== undefined && stored.text.slice(kind.start, kind.end) === JSON.stringify(stored.kind)) return;
  readStoredEvent(stored);
}
