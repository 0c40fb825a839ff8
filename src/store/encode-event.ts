import { checkEvent, EventValidationError } from '../events/validate-event.js';
import type { JsonValue } from '../json/json-value.js';
import { hasUnstorableChar, storableSourceText, toStorableJson } from '../json/storable-json.js';
import { type EventOrigin, InvalidEventError } from './invalid-event-error.js';

/** An event ready for a `session_events` row. */
export interface EncodedEvent {
  kind: string;
  turn: number | null;
  /** JSON text for the `payload` jsonb column. */
  payload: string;
  /** The exact JSON text, only where `payload` had to replace U+0000 or a lone surrogate. */
  payloadText: string | null;
}

export interface EncodeOptions {
  /** Refuse kinds the contract does not name (by default they are stored and ignored). */
  strict?: boolean;
}

/**
 * Validates one event against the contract and encodes it for storage, or throws an
 * {@link InvalidEventError} that names where it came from. `sourceText`, the JSON the value
 * was parsed from, is stored as it is when jsonb can hold it.
 *
 * @example
 * ```ts
 * const row = encodeEvent({ kind: 'page_in', turn: 3, entry_count: 2 }, { sessionId: 's1', seq: 0 });
 * row.turn; // 3
 * ```
 */
export function encodeEvent(value: JsonValue, origin: EventOrigin, options: EncodeOptions = {}, sourceText?: string): EncodedEvent {
  let checked;
  try {
    checked = checkEvent(value, options);
  } catch (error) {
    if (error instanceof EventValidationError) throw InvalidEventError.fromValidation(origin, error);
    throw error;
  }
  const { payload, exactText } = (sourceText === undefined ? undefined : storableSourceText(sourceText)) ?? storable(value, origin);
  return { kind: checked.kind, turn: checked.turn, payload, payloadText: exactText };
}

function storable(value: JsonValue, origin: EventOrigin): ReturnType<typeof toStorableJson> {
  try {
    return toStorableJson(value);
  } catch (error) {
    if (error instanceof TypeError || error instanceof RangeError) throw new InvalidEventError(origin, `not JSON: ${error.message}`);
    throw error;
  }
}

/** A session id is a non-empty string that PostgreSQL `text` can hold. */
export function checkSessionId(sessionId: unknown, origin: Omit<EventOrigin, 'sessionId'> = {}): string {
  if (typeof sessionId !== 'string' || sessionId === '' || hasUnstorableChar(sessionId)) {
    const shown = typeof sessionId === 'string' ? JSON.stringify(sessionId) : String(sessionId);
    throw new InvalidEventError(
      origin,
      `session id ${shown} is not valid: it must be a non-empty string without U+0000 or lone surrogates`,
    );
  }
  return sessionId;
}
