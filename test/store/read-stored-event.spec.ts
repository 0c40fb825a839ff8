import { describe, expect, it } from 'vitest';
import { CorruptEventError } from '../../src/stored-log/corrupt-event-error.js';
import type { StoredEventText } from '../../src/stored-log/stored-event.js';
import { checkStoredEvent, readStoredEvent } from '../../src/stored-log/read-stored-event.js';

const stored = (text: string, kind = 'page_in'): StoredEventText => ({ sessionId: 's', seq: 3, position: 7, kind, recordedAt: new Date(0), text });

const deep = (levels: number) => `{"kind":"page_in","a":${'['.repeat(levels)}${']'.repeat(levels)}}`;

describe('checkStoredEvent, the check of `os-audit events`', () => {
  it.each([
    ['a plain event', '{"kind":"page_in","turn":1}', 'page_in'],
    ['a kind written with an escape (the scan leaves it to the parser)', '{"kind":"page\\u005fin"}', 'page_in'],
    ['a kind with a lone surrogate, which its row holds as U+FFFD', '{"kind":"x\\ud800"}', 'x\ufffd'],
    ['white space between tokens', ' {"kind": "page_in"} ', 'page_in'],
    ['nesting deeper than the scan follows', deep(100), 'page_in'],
  ])('passes %s', (_, text, kind) => {
    expect(() => checkStoredEvent(stored(text, kind))).not.toThrow();
  });

  it.each([
    ['not JSON', 'not json at all', "the stored event is not JSON: unexpected character 'o' at column 2"],
    ['a key repeated', '{"kind":"page_in","kind":"page_in"}', 'the stored event is not JSON: duplicate key "kind" in object at $ (column 19)'],
    ['too deep', deep(600), 'the stored event has nesting deeper than 512 levels in one event at column 534'],
    ['not an object', '42', 'the stored event is not a JSON object: it is 42'],
    ['without a kind', '{"turn":1}', 'the stored event has no kind (its row\'s is "page_in")'],
    ['of another kind', '{"kind":null}', 'the stored event\'s kind is null, not its row\'s "page_in"'],
  ])('refuses a stored text %s as readStoredEvent does, naming the session and the seq', (_, text, problem) => {
    const expected = { name: 'CorruptEventError', sessionId: 's', seq: 3, problem, message: `session "s", seq 3: ${problem}` };
    expect(() => checkStoredEvent(stored(text))).toThrow(expect.objectContaining(expected));
    expect(() => readStoredEvent(stored(text))).toThrow(expect.objectContaining(expected));
  });
});

describe('readStoredEvent', () => {
  it('gives the event as its parse gives it', () => {
    expect(readStoredEvent(stored('{"kind":"page_in","n":1}'), JSON.parse)).toEqual({ kind: 'page_in', n: 1 });
  });

  it("words JSON.parse's refusal as JSON.parse does, and keeps it as the cause", () => {
    const refusal = expect.objectContaining({ problem: expect.stringMatching(/^the stored event is not JSON: Expected property name/), cause: expect.any(SyntaxError) });
    expect(() => readStoredEvent(stored('{'), JSON.parse)).toThrow(refusal);
    expect(() => readStoredEvent(stored('{'), JSON.parse)).toThrow(CorruptEventError);
  });
});
