import { EventValidationError, validateEvent } from './validate-event.js';
import { describeJsonValue } from '../json/describe-json-value.js';
import { compactJson, nestsDeeperThan } from '../json/json-text.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../json/json-value.js';
import { MAX_JSON_DEPTH, parseJson, TOO_DEEP_MESSAGE } from '../json/parse-json.js';
import { escapeLoneSurrogates, hasUnstorableChar, mayHoldUnreadableString, readableStandInText, replaceUnstorableChars } from '../json/storable-json.js';
import { stringifyJson } from '../json/stringify-json.js';
import { isU32 } from '../json/unsigned-integers.js';
import { type EventOrigin, InvalidEventError } from './invalid-event-error.js';
import { eventTooLarge, type Limits, maxEventBytesOf, maxSessionIdBytesOf } from './limits.js';

/**
 * An event ready for a `session_events` row.
 *
 * @example
 * ```ts
 * encodeEventText('{"kind":"x","note":"a\\u0000b"}', {});
 * // { kind: 'x', turn: null, payload: '{"kind":"x","note":{"os_audit_unstorable_string":"a\ufffdb"}}',
 * //   payloadText: '{"kind":"x","note":"a\\u0000b"}' }
 * ```
 */
export interface EncodedEvent {
  /** The event's `kind`, for the `kind` column (U+FFFD in place of a character `text` cannot hold). */
  kind: string;
  /** The event's `turn` when it is a u32 integer, else null: the `turn` column. */
  turn: number | null;
  /**
   * JSON text for the `payload` column, which PostgreSQL's JSON functions can always read. It
   * is the event as written, white space between tokens removed. When that holds a string SQL
   * cannot read (U+0000, a lone surrogate, escaped or not), it is a readable stand-in.
   */
  payload: string;
  /**
   * The exact event, only where `payload` is a stand-in; a lone surrogate written as is there is
   * written as its escape (`\ud800`: the same JSON), since PostgreSQL text cannot hold it.
   */
  payloadText: string | null;
}

/**
 * How an event is checked before it is encoded.
 *
 * @example
 * ```ts
 * encodeEventText('{"kind":"llm_completed","turn":1,"content":"hi"}', {}, { strict: true });
 * // throws InvalidEventError: field "message": required field is missing
 * ```
 */
export interface EncodeOptions extends Limits {
  /**
   * Enforce the Rust core's shapes (section 2 of the contract): refuse what its decoder would,
   * unknown kinds included. By default every JSON object with a non-empty string `kind` is
   * stored as written.
   */
  strict?: boolean;
}

/**
 * Encodes one event from its JSON text as written (a line of a log file, the `event` member of
 * one), or throws an {@link InvalidEventError} naming where it came from. The text is stored
 * as it is, white space between tokens removed. `value` is the text already parsed (with
 * `parseJson`), when the caller has it.
 *
 * Refused: text of more than `maxEventBytes` bytes (64 MiB by default), text that is not JSON,
 * a value that is not an object or has no non-empty string `kind`. Also refused: a key repeated
 * in one object, nesting deeper than `MAX_JSON_DEPTH`, and under `strict` whatever the Rust
 * core's decoder refuses.
 *
 * @example
 * ```ts
 * encodeEventText('{"kind": "page_in", "turn": 3, "entry_count": 2}', { sessionId: 's1', seq: 0 });
 * // { kind: 'page_in', turn: 3, payload: '{"kind":"page_in","turn":3,"entry_count":2}', payloadText: null }
 * ```
 */
export function encodeEventText(text: string, origin: EventOrigin, options: EncodeOptions = {}, value?: JsonValue): EncodedEvent {
  checkEventSize(text, origin, options);
  const event = checkEvent(value ?? InvalidEventError.parsing(() => parseJson(text), origin), origin, options);
  return encoded(event, compactJson(text));
}

/**
 * Encodes one event given as a value (integers above 2^53 as `bigint`, floats as `JsonFloat`),
 * stored as `stringifyJson` writes it (what `JSON.stringify` writes, those numbers exactly),
 * with the same refusals as {@link encodeEventText}.
 *
 * @example
 * ```ts
 * encodeEventValue({ kind: 'run_terminal', reason: 'done', turns_used: 3, total_tokens: 2n ** 64n - 1n }, { sessionId: 's1' });
 * ```
 */
export function encodeEventValue(value: JsonValue, origin: EventOrigin, options: EncodeOptions = {}): EncodedEvent {
  let text: string | undefined;
  try {
    text = stringifyJson(value);
  } catch (error) {
    if (error instanceof RangeError) throw new InvalidEventError(origin, error.message);
    if (error instanceof TypeError) throw new InvalidEventError(origin, `not JSON: ${error.message}`);
    throw error;
  }
  return encodeWritten(value, text, origin, options);
}

/**
 * Encodes one event as the runtime's SDKs hand it to their session log, a plain JavaScript
 * object. It is stored as `JSON.stringify` writes it, as the SDKs' `FileSessionLog` does:
 * members that are `undefined` dropped, `NaN` and `Infinity` written `null`. The refusals are
 * those of {@link encodeEventText}.
 *
 * @example
 * ```ts
 * encodeSdkEvent({ kind: 'llm_completed', turn: 1, content: 'hi', tool_calls: [] }, { sessionId: 's1' });
 * ```
 */
export function encodeSdkEvent(event: object, origin: EventOrigin, options: EncodeOptions = {}): EncodedEvent {
  let text: string | undefined;
  try {
    text = JSON.stringify(event);
  } catch (error) {
    if (error instanceof TypeError || error instanceof RangeError) throw new InvalidEventError(origin, `not JSON: ${error.message}`);
    throw error;
  }
  if (text !== undefined && nestsDeeperThan(text, MAX_JSON_DEPTH)) throw new InvalidEventError(origin, TOO_DEEP_MESSAGE);
  return encodeWritten(event, text, origin, options);
}

/**
 * The row of `event`, of which `text` is the JSON text written. The text is what is stored, so
 * the `kind` and `turn` columns must be its own. They are read off the object only where it
 * shows them as the text has them, else from the text, which also refuses what is no event.
 */
function encodeWritten(event: unknown, text: string | undefined, origin: EventOrigin, options: EncodeOptions): EncodedEvent {
  if (text === undefined || !text.startsWith('{')) throw new InvalidEventError(origin, `the event: expected an object, got ${describeJsonValue(event)}`);
  checkEventSize(text, origin, options);
  const shown = kindAndTurnAsWritten(event as object);
  return (shown && encodeAsWritten(text, shown, options)) ?? encodeEventText(text, origin, options);
}

/**
 * The row of an event stored exactly as written, skipping the parse. The caller vouches that
 * the compact JSON text is JSON, that its size was checked, and that `kind` (a non-empty
 * string) and `turn` are the text's. `undefined` when only a parse can tell (under `strict`, or
 * when it may hold a string SQL cannot read): then use {@link encodeEventText}.
 *
 * @example
 * ```ts
 * encodeAsWritten('{"kind":"page_in","turn":3}', { kind: 'page_in', turn: 3 }, {});
 * // { kind: 'page_in', turn: 3, payload: '{"kind":"page_in","turn":3}', payloadText: null }
 * ```
 */
export function encodeAsWritten(compactText: string, shown: { kind: string; turn: unknown }, options: EncodeOptions): EncodedEvent | undefined {
  if (options.strict || mayHoldUnreadableString(compactText)) return undefined;
  return { kind: shown.kind, turn: u32OrNull(shown.turn), payload: compactText, payloadText: null };
}

/**
 * The object's `kind` (a non-empty string) and `turn` as its JSON text has them, when they are
 * plain own data members. `undefined` when only the text can tell: a getter, an inherited or
 * non-enumerable member, a `toJSON`, a `kind` that is no such string.
 */
function kindAndTurnAsWritten(event: object): { kind: string; turn: unknown } | undefined {
  if (typeof (event as { toJSON?: unknown }).toJSON === 'function') return undefined;
  const kind = Object.getOwnPropertyDescriptor(event, 'kind');
  if (kind === undefined || !kind.enumerable || typeof kind.value !== 'string' || kind.value === '') return undefined;
  const turn = Object.getOwnPropertyDescriptor(event, 'turn');
  if (turn !== undefined && (!turn.enumerable || !('value' in turn))) return undefined;
  // Numbers the text may write otherwise: -0 as 0 (JSON.stringify), a bigint or a boxed number as its digits.
  const turnValue: unknown = turn?.value;
  if (Object.is(turnValue, -0) || typeof turnValue === 'bigint' || (typeof turnValue === 'object' && turnValue !== null)) return undefined;
  return { kind: kind.value, turn: turnValue };
}

/** Refuses an event text of more bytes than the limit (counted first when it may be over: it takes a pass over the text). */
export function checkEventSize(text: string, origin: EventOrigin, limits: Limits): void {
  // A UTF-16 code unit is at most 3 bytes of UTF-8.
  if (text.length * 3 <= maxEventBytesOf(limits)) return;
  const tooLarge = eventTooLarge(Buffer.byteLength(text), limits);
  if (tooLarge !== undefined) throw new InvalidEventError(origin, tooLarge);
}

/** The event as an object with a non-empty string kind (and, under `strict`, the Rust core's shape). */
function checkEvent(value: JsonValue, origin: EventOrigin, options: EncodeOptions): JsonObject {
  if (!isJsonObject(value)) throw new InvalidEventError(origin, `the event: expected an object, got ${describeJsonValue(value)}`);
  checkKind(value['kind'], origin);
  if (options.strict) {
    try {
      validateEvent(value, { strict: true });
    } catch (error) {
      if (error instanceof EventValidationError) throw InvalidEventError.fromValidation(origin, error);
      throw error;
    }
  }
  return value;
}

function checkKind(kind: unknown, origin: EventOrigin): void {
  if (typeof kind === 'string' && kind !== '') return;
  const found = kind === undefined ? 'required field is missing' : `expected a non-empty string, got ${describeJsonValue(kind)}`;
  throw new InvalidEventError(origin, `field "kind": ${found}`);
}

/** The row of an event whose exact text is `text`. */
function encoded(event: JsonObject, text: string): EncodedEvent {
  const kind = event['kind'] as string;
  const turn = u32OrNull(event['turn']);
  const standIn = mayHoldUnreadableString(text) ? readableStandInText(event) : undefined;
  if (standIn === undefined) return { kind, turn, payload: text, payloadText: null };
  return { kind: replaceUnstorableChars(kind), turn, payload: standIn, payloadText: escapeLoneSurrogates(text) };
}

function u32OrNull(turn: unknown): number | null {
  return isU32(turn) ? turn : null;
}

/**
 * A session id is a non-empty string that PostgreSQL `text` can hold; one to store must also be
 * at most `maxSessionIdBytes` bytes (1024 by default; `limits` undefined: a session id to look up).
 *
 * @example
 * ```ts
 * checkSessionId('x'.repeat(2000), { file: 'in.jsonl', line: 3 }, {}); // throws InvalidEventError: … longer than 1024 bytes …
 * ```
 */
export function checkSessionId(sessionId: unknown, origin: Omit<EventOrigin, 'sessionId'> = {}, limits?: Limits): string {
  // Described, not converted: a parsed JSON object has no prototype, hence no toString.
  if (typeof sessionId !== 'string') throw new InvalidEventError(origin, `session id: expected a non-empty string, got ${describeJsonValue(sessionId)}`);
  if (sessionId === '' || hasUnstorableChar(sessionId)) {
    const shown = JSON.stringify(shortened(sessionId));
    throw new InvalidEventError(
      origin,
      `session id ${shown} is not valid: it must be a non-empty string without U+0000 or lone surrogates`,
    );
  }
  if (limits !== undefined) {
    const max = maxSessionIdBytesOf(limits);
    const bytes = sessionId.length * 3 > max ? Buffer.byteLength(sessionId) : 0;
    if (bytes > max) {
      throw new InvalidEventError(
        origin,
        `session id ${JSON.stringify(shortened(sessionId))} is ${bytes} bytes, longer than ${max} (the limit is maxSessionIdBytes, --max-session-id-bytes or OS_AUDIT_MAX_SESSION_ID_BYTES)`,
      );
    }
  }
  return sessionId;
}

/** The start of a long text, for an error message that must stay readable. */
function shortened(text: string): string {
  return text.length <= SHOWN_CHARS ? text : `${text.slice(0, SHOWN_CHARS)}…`;
}

const SHOWN_CHARS = 80;
