import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { EncodedEvent } from '../../src/events/encode-event.js';
import { emptyRows, pushRow } from '../../src/store/sql/event-rows.js';
import { copyField, eventRowsText, sessionEventsText } from '../../src/store/sql/copy-events.js';

const plain: EncodedEvent = { kind: 'page_in', turn: 3, payload: '{"kind":"page_in","turn":3}', payloadText: null };
const awkward: EncodedEvent = {
  kind: 'odd\tkind\nwith\rbreaks\\',
  turn: null,
  payload: '{"kind":"odd","note":"caf\u00e9 \u{1f600} \\"quoted\\" a\\\\b"}',
  payloadText: '{"kind": "odd",\t"note": "x"}',
};
const large: EncodedEvent = { kind: 'big', turn: 1, payload: `{"kind":"big","text":"${'\u00e9\u{1f600}\\n'.repeat(20_000)}"}`, payloadText: null };

const awkwardRow =
  's\\\\1\t8\todd\\tkind\\nwith\\rbreaks\\\\\t\\N\t' +
  '{"kind":"odd","note":"caf\u00e9 \u{1f600} \\\\"quoted\\\\" a\\\\\\\\b"}\t' +
  '{"kind": "odd",\\t"note": "x"}\n';

describe('COPY text of events', () => {
  it('escapes backslashes, tabs and line breaks in every field, writes \\N for null and keeps other characters as UTF-8', () => {
    const text = Buffer.concat([...sessionEventsText('s\\1', 7, [[plain, awkward]])]).toString('utf8');
    expect(text).toBe(`s\\\\1\t7\tpage_in\t3\t{"kind":"page_in","turn":3}\t\\N\n${awkwardRow}`);
  });

  it('writes each slice as its own bytes, an event larger than the slice was sized for included', () => {
    const slices = [...sessionEventsText('s', 0, [[plain], [large, plain]])];
    expect(slices).toHaveLength(2);
    const second = slices[1]!.toString('utf8');
    expect(second).toBe(`s\t1\tbig\t1\t${large.payload.replaceAll('\\', '\\\\')}\t\\N\ns\t2\tpage_in\t3\t${plain.payload}\t\\N\n`);
  });

  it('writes rows of many sessions a slice of the given size at a time', () => {
    const rows = emptyRows();
    pushRow(rows, 'a', 0, plain);
    pushRow(rows, 's\\1', 8, awkward);
    pushRow(rows, 'b', 5, plain);
    const slices = [...eventRowsText(rows, 2)].map((slice) => slice.toString('utf8'));
    expect(slices).toEqual([`a\t0\tpage_in\t3\t${plain.payload}\t\\N\n${awkwardRow}`, `b\t5\tpage_in\t3\t${plain.payload}\t\\N\n`]);
  });

  it('writes every field as copyField escapes it, however many backslashes and wherever they stand', () => {
    const text = fc.string({ unit: fc.constantFrom('\\', '\\', 'a', '\u00e9', '\u{1f600}', '"', '\t', '\n', '\r'), maxLength: 40 });
    const event = fc.record({ kind: text, turn: fc.constantFrom(null, 0, 7), payload: text, payloadText: fc.option(text) });
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 5 }), fc.array(event, { maxLength: 6 }), (sessionId, events) => {
        const written = Buffer.concat([...sessionEventsText(sessionId, 0, [events])]).toString('utf8');
        const fields = (value: string | null) => (value === null ? '\\N' : copyField(value));
        const expected = events.map((e, seq) => [copyField(sessionId), seq, copyField(e.kind), e.turn ?? '\\N', copyField(e.payload), fields(e.payloadText)].join('\t') + '\n');
        expect(written).toBe(expected.join(''));
      }),
      { numRuns: 2000 },
    );
  });
});
