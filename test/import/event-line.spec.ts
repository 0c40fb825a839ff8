import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type EventLine, parseEventLine, readEventLine } from '../../src/import/event-line.js';
import type { EncodeOptions } from '../../src/events/encode-event.js';
import { type EventOrigin, InvalidEventError } from '../../src/events/invalid-event-error.js';

/** What reading a line gives: the line, or the message of the error that refuses it. */
function outcome(read: () => EventLine): { line: EventLine } | { error: string } {
  try {
    return { line: read() };
  } catch (error) {
    if (!(error instanceof InvalidEventError)) throw error;
    return { error: error.message };
  }
}

function expectSameAsParsed(text: string, origin: EventOrigin, options: EncodeOptions = {}): void {
  expect(outcome(() => readEventLine(text, origin, options)), text).toEqual(outcome(() => parseEventLine(text, origin, options)));
}

const FILE_ORIGIN: EventOrigin = { file: 's1.jsonl', line: 4, sessionId: 's1' };
const STREAM_ORIGIN: EventOrigin = { file: 'in.jsonl', line: 9 };

/** Values a member of an envelope or an event may have, the awkward ones often. */
const awkward = fc.oneof(
  fc.nat(),
  fc.constantFrom(-1, -0, 1.5, 2 ** 32, 2 ** 53, 4294967295, '', 'x', 'a\u0000b', '\ud800', 'é', 'tab\there', null, true),
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.jsonValue({ maxDepth: 2 }),
);

/** Mostly `usual`, now and then an awkward value. */
const mostly = <T>(usual: fc.Arbitrary<T>) => fc.oneof({ arbitrary: usual, weight: 6 }, { arbitrary: awkward, weight: 1 });

/** Now and then `value`, else null. */
const rarely = <T>(value: fc.Arbitrary<T>) => fc.oneof({ arbitrary: fc.constant(null), weight: 6 }, { arbitrary: value, weight: 1 });

const event = fc.record(
  {
    kind: mostly(fc.constantFrom('page_in', 'llm_completed', 'a\\b', 'k\u00e9', 'x'.repeat(1600))),
    turn: mostly(fc.nat()),
    body: fc.object({ key: fc.string({ maxLength: 6, unit: fc.constantFrom(...'ab_é 1'.split('')) }), maxDepth: 3, values: [fc.string({ unit: 'binary', maxLength: 12 }), fc.double(), fc.integer(), fc.boolean(), fc.constant(null)] }),
    extra: rarely(fc.jsonValue({ maxDepth: 2 })),
  },
  { requiredKeys: ['kind'] },
);

/** Lines as runtimes write them, and now and then with white space, escapes, odd members or mangled bytes. */
const line = fc
  .tuple(
    fc.record({ session_id: mostly(fc.constantFrom('s2', 'ü', 'a\\"b')), seq: mostly(fc.nat()), event: mostly(event) }),
    fc.boolean(),
    rarely(fc.constantFrom('session_id', 'seq', 'event', 'other')),
    fc.constantFrom('compact', 'compact', 'compact', 'spaced', 'escaped'),
    rarely(fc.tuple(fc.nat(), fc.nat({ max: 2 }), fc.string({ maxLength: 2, unit: fc.constantFrom(...'{}[]",:0-.e \\u\t'.split('')) }))),
  )
  .map(([{ session_id, ...envelope }, stream, odd, style, mangle]) => {
    // A member missing, or one more.
    const members: Record<string, unknown> = stream ? { session_id, ...envelope } : envelope;
    if (odd === 'other') members['other'] = 1;
    else if (odd !== null) delete members[odd];
    let text = style === 'spaced' ? JSON.stringify(members, null, 1).replaceAll('\n', ' ') : JSON.stringify(members);
    // Keys and values written with escapes where the writer could have written the characters.
    if (style === 'escaped') text = text.replaceAll('"kind"', '"\\u006bind"').replaceAll('s', '\\u0073');
    if (mangle !== null) {
      const [at, cut, insert] = mangle;
      const i = at % (text.length + 1);
      text = text.slice(0, i) + insert + text.slice(i + cut);
    }
    return { text, origin: stream ? STREAM_ORIGIN : FILE_ORIGIN };
  });

describe('readEventLine', () => {
  it('reads a session file\'s line and a stream\'s', () => {
    expect(readEventLine('{"seq":0,"event":{"kind":"page_in","turn":1,"entry_count":2}}', FILE_ORIGIN, {})).toEqual({
      sessionId: 's1',
      seq: 0,
      event: { kind: 'page_in', turn: 1, payload: '{"kind":"page_in","turn":1,"entry_count":2}', payloadText: null },
      origin: { ...FILE_ORIGIN, seq: 0 },
    });
    expect(readEventLine('{"session_id":"s2","seq":7,"event":{"kind":"x"}}', STREAM_ORIGIN, {})).toEqual({
      sessionId: 's2',
      seq: 7,
      event: { kind: 'x', turn: null, payload: '{"kind":"x"}', payloadText: null },
      origin: { ...STREAM_ORIGIN, sessionId: 's2', seq: 7 },
    });
  });

  it('stores the event without white space between its tokens, and a readable stand-in where SQL cannot read a string', () => {
    expect(readEventLine('{"seq":0, "event": {"kind": "x", "a": [1, "b c"]} }', FILE_ORIGIN, {}).event.payload).toBe('{"kind":"x","a":[1,"b c"]}');
    const standIn = readEventLine('{"seq":0,"event":{"kind":"x","a":"\\u0000"}}', FILE_ORIGIN, {}).event;
    expect(standIn.payloadText).toBe('{"kind":"x","a":"\\u0000"}');
    expect(standIn.payload).toContain('os_audit_unstorable_string');
  });

  it('refuses what the contract refuses, naming the line, the session and the seq', () => {
    expect(() => readEventLine('{"seq":3,"event":{"kind":""}}', FILE_ORIGIN, {})).toThrow('s1.jsonl:4: session "s1", seq 3: field "kind": expected a non-empty string, got the string ""');
    expect(() => readEventLine('{"seq":3,"event":{"kind":"x"},"seq":4}', FILE_ORIGIN, {})).toThrow(/duplicate key "seq"/);
    expect(() => readEventLine('{"seq":3,"event":{"kind":"x"}}', STREAM_ORIGIN, {})).toThrow('in.jsonl:9: field "session_id" is missing');
    expect(() => readEventLine('{"session_id":"s","seq":3,"event":{"kind":"x"}}', FILE_ORIGIN, {})).toThrow('unexpected field "session_id"');
    expect(() => readEventLine(`{"seq":3,"event":{"kind":"${'x'.repeat(100)}"}}`, FILE_ORIGIN, { maxEventBytes: 50 })).toThrow(/seq 3: .*50/);
  });

  it('reads every line as the careful parse does, or refuses it with the same error', () => {
    fc.assert(
      fc.property(line, rarely(fc.constant(true)), ({ text, origin }, strict) => {
        expectSameAsParsed(text, origin, { strict: strict ?? false, maxEventBytes: 1500 });
      }),
      { numRuns: 5000 },
    );
  });
});
