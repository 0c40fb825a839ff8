import { describeJsonValue } from '../json/describe-json-value.js';
import { compactJson } from '../json/json-text.js';
import { isJsonObject, type JsonObject } from '../json/json-value.js';
import { parseJsonKeepingMember, SAFE_DIGITS } from '../json/parse-json.js';
import { type JsonObjectScan, scanJsonObject } from '../json/scan-json.js';
import { checkEventSize, checkSessionId, type EncodedEvent, type EncodeOptions, encodeAsWritten, encodeEventText } from '../events/encode-event.js';
import { type EventOrigin, InvalidEventError } from '../events/invalid-event-error.js';

/** One line of a log, read and checked. */
export interface EventLine {
  sessionId: string;
  seq: number;
  event: EncodedEvent;
  /** `origin` with the line's session and seq. */
  origin: EventOrigin;
}

/**
 * Reads one line of a log: `{"seq": N, "event": {…}}` in a session's file (`origin` names the
 * session), `{"session_id": "…", "seq": N, "event": {…}}` in a stream (it does not). Throws an
 * {@link InvalidEventError} naming `origin` (and the session and seq once they are known) when
 * the line breaks the contract.
 *
 * Most lines are read without building their event: a scan checks the JSON and finds the event's
 * `kind` and `turn` (see `scanJsonObject`). A line the scan leaves in doubt is parsed, which gives
 * the same event, or the exact error.
 *
 * @example
 * ```ts
 * readEventLine('{"seq":0,"event":{"kind":"page_in","turn":1}}', { file: 's1.jsonl', line: 1, sessionId: 's1' }, {});
 * // { sessionId: 's1', seq: 0, event: { kind: 'page_in', turn: 1, … }, origin: { …, seq: 0 } }
 * ```
 */
export function readEventLine(text: string, origin: EventOrigin, options: EncodeOptions): EventLine {
  const scan = options.strict ? undefined : scanJsonObject(text, 'event', EVENT_COLUMN_MEMBERS);
  return (scan && readScannedLine(text, scan, origin, options)) ?? parseEventLine(text, origin, options);
}

/** The members of a line: a stream's name their session, a session file's do not. */
function lineFields(origin: EventOrigin): readonly string[] {
  return origin.sessionId === undefined ? STREAM_LINE_FIELDS : SESSION_FILE_LINE_FIELDS;
}

const SESSION_FILE_LINE_FIELDS = ['seq', 'event'];
const STREAM_LINE_FIELDS = ['session_id', 'seq', 'event'];
/** The members of an event that fill columns of its row. */
const EVENT_COLUMN_MEMBERS = ['kind', 'turn'];

/**
 * The line as its scan shows it, when every member is written plainly and the event can be
 * stored as written; else undefined. Plainly means the seq as digits, the session id and the
 * kind as strings without escapes, the turn as digits or absent. It refuses what {@link parseEventLine} would
 * refuse first, with the same error.
 */
function readScannedLine(text: string, scan: JsonObjectScan, origin: EventOrigin, options: EncodeOptions): EventLine | undefined {
  if (scan.members.length !== lineFields(origin).length || scan.innerMembers === null) return undefined;
  let seq: number | undefined;
  let sessionId = origin.sessionId;
  let eventStart = 0;
  let eventEnd = 0;
  for (const { key, start, end } of scan.members) {
    if (key === 'seq') seq = plainInteger(text, start, end);
    else if (key === 'event') [eventStart, eventEnd] = [start, end];
    else if (key === 'session_id' && sessionId === undefined) sessionId = plainString(text, start, end);
    else return undefined;
  }
  if (seq === undefined || sessionId === undefined) return undefined;
  const [kindMember, turnMember] = scan.innerMembers;
  const kind = kindMember && plainString(text, kindMember.start, kindMember.end);
  const turn = turnMember === undefined ? undefined : plainInteger(text, turnMember.start, turnMember.end);
  if (!kind || (turnMember !== undefined && turn === undefined)) return undefined;

  if (origin.sessionId === undefined) checkSessionId(sessionId, origin, options);
  const at = { ...origin, sessionId, seq };
  const eventText = text.slice(eventStart, eventEnd);
  checkEventSize(eventText, at, options);
  const event = encodeAsWritten(scan.innerHasWhiteSpace ? compactJson(eventText) : eventText, { kind, turn }, options);
  return event && { sessionId, seq, event, origin: at };
}

/** Digits of an integer from 0 that is safe to read without a parse (at most {@link SAFE_DIGITS} of them). */
function plainInteger(text: string, start: number, end: number): number | undefined {
  if (end - start > SAFE_DIGITS || (text.charCodeAt(start) === 0x30 && end - start > 1)) return undefined;
  let value = 0;
  for (let i = start; i < end; i++) {
    const digit = text.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9) return undefined;
    value = value * 10 + digit;
  }
  return value;
}

/** A JSON string's value when it holds no escape (a scanned string ends at its first unescaped quote). */
function plainString(text: string, start: number, end: number): string | undefined {
  if (text.charCodeAt(start) !== 0x22) return undefined;
  const value = text.slice(start + 1, end - 1);
  return value.includes('\\') ? undefined : value;
}

/**
 * {@link readEventLine} the careful way, which its fast path must agree with: the line parsed
 * whole (its event too), each field checked in turn.
 *
 * @example
 * ```ts
 * parseEventLine('{"seq":-1,"event":{"kind":"x"}}', { file: 's1.jsonl', line: 1, sessionId: 's1' }, {});
 * // throws InvalidEventError: s1.jsonl:1: session "s1": field "seq": expected an integer from 0, got -1
 * ```
 */
export function parseEventLine(text: string, origin: EventOrigin, options: EncodeOptions): EventLine {
  const { envelope, eventText } = parseEnvelope(text, origin, lineFields(origin));
  const sessionId = origin.sessionId ?? checkSessionId(envelope.session_id, origin, options);
  const seq = readSeq(envelope, { ...origin, sessionId });
  const at = { ...origin, sessionId, seq };
  return { sessionId, seq, event: encodeEventText(eventText!, at, options, envelope.event), origin: at };
}

/** A line's envelope, checked, with the source text of its `event` (stored as it is when it can be). */
function parseEnvelope(text: string, origin: EventOrigin, fields: readonly string[]): { envelope: JsonObject; eventText: string | undefined } {
  const { value, memberText: eventText } = InvalidEventError.parsing(() => parseJsonKeepingMember(text, 'event'), origin);
  const shape = () => `{${fields.map((field) => JSON.stringify(field)).join(', ')}}`;
  if (!isJsonObject(value)) throw new InvalidEventError(origin, `expected a JSON object ${shape()}`);
  for (const field of fields) {
    if (!(field in value)) throw new InvalidEventError(origin, `field "${field}" is missing (a line is ${shape()})`);
  }
  for (const key of Object.keys(value)) {
    if (!fields.includes(key)) throw new InvalidEventError(origin, `unexpected field "${key}" (a line is ${shape()})`);
  }
  return { envelope: value, eventText };
}

function readSeq(envelope: JsonObject, origin: EventOrigin): number {
  const seq = envelope.seq;
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0) {
    throw new InvalidEventError(origin, `field "seq": expected an integer from 0, got ${describeJsonValue(seq)}`);
  }
  return seq;
}
