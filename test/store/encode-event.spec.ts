import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../src/json/json-value.js';
import { type EncodedEvent, encodeEventValue, encodeSdkEvent } from '../../src/events/encode-event.js';
import { InvalidEventError } from '../../src/events/invalid-event-error.js';

const origin = { sessionId: 's1' };

/** The columns the stored text itself gives: what a row must hold (its `kind` is checked against its payload). */
function columnsOfText(encoded: EncodedEvent): { kind: unknown; turn: unknown } {
  const event = JSON.parse(encoded.payloadText ?? encoded.payload) as { kind?: unknown; turn?: unknown };
  return { kind: event.kind, turn: typeof event.turn === 'number' && !Object.is(event.turn, -0) ? event.turn : null };
}

/** Events whose `kind` or `turn` the object and the JSON text written of it do not show alike. */
function awkwardEvents(): [string, object][] {
  let calls = 0;
  class WithKindGetter {
    turn = 1;
    get kind() {
      return 'page_in';
    }
  }
  return [
    ['an enumerable getter giving another kind at each call', Object.defineProperty({ turn: 1 }, 'kind', { get: () => `kind_${calls++}`, enumerable: true })],
    ['a toJSON writing another object', { kind: 'page_in', turn: 1, toJSON: () => ({ kind: 'page_out', turn: 2 }) }],
    ['an inherited toJSON', Object.assign(Object.create({ toJSON: () => ({ kind: 'resumed', turn: 3 }) }) as object, { kind: 'page_in' })],
    ['a boxed kind', { kind: Object('page_in') as string, turn: 1 }],
    ['a turn getter giving another turn at each call', Object.defineProperty({ kind: 'page_in' }, 'turn', { get: () => 4 + calls++, enumerable: true })],
    ['a non-enumerable turn', Object.defineProperty({ kind: 'page_in' }, 'turn', { value: 4 })],
    ['a bigint turn', { kind: 'page_in', turn: 5n }],
    ['a turn of -0', { kind: 'page_in', turn: -0 }],
    ['a prototype getter kind, its text without one', new WithKindGetter()],
    ['a non-enumerable kind, its text without one', Object.defineProperty({ turn: 1 }, 'kind', { value: 'page_in' })],
    ['an inherited kind, its text without one', Object.assign(Object.create({ kind: 'page_in' }) as object, { turn: 1 })],
  ];
}

describe('encodeSdkEvent and encodeEventValue', () => {
  it.each(awkwardEvents())('take kind and turn from the text they store, or refuse it: %s', (_case, event) => {
    for (const encode of [encodeSdkEvent, (value: object) => encodeEventValue(value as JsonValue, origin)]) {
      let encoded: EncodedEvent;
      try {
        encoded = encode(event, origin);
      } catch (error) {
        // Refused before anything is sent: a text without a kind, or a bigint JSON.stringify cannot write.
        expect(error).toBeInstanceOf(InvalidEventError);
        expect((error as Error).message).toMatch(/^session "s1": (field "kind": required field is missing|not JSON: Do not know how to serialize a BigInt)$/);
        continue;
      }
      expect({ kind: encoded.kind, turn: encoded.turn }).toEqual(columnsOfText(encoded));
    }
  });

  it('store a plain event as it is, its kind and turn read off the object', () => {
    const event = { kind: 'page_in', turn: 3, entry_count: 2 };
    expect(encodeSdkEvent(event, origin)).toEqual({ kind: 'page_in', turn: 3, payload: JSON.stringify(event), payloadText: null });
    expect(encodeEventValue({ ...event, total: 2n ** 64n }, origin)).toEqual({
      kind: 'page_in',
      turn: 3,
      payload: '{"kind":"page_in","turn":3,"entry_count":2,"total":18446744073709551616}',
      payloadText: null,
    });
  });
});
