import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/json/json-value.js';
import { stringifyJson } from '../../src/json/stringify-json.js';
import { defineEventReads, type EventReads, field, readEvent, readFieldsSql, readKindsSql } from '../../src/projector/event-reads.js';
import { EventStore } from '../../src/store/event-store.js';
import { compareWithFold, osSnapshotProjector } from '../support/projector-harness.js';
import { createTestDatabase, useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase({ migrate: false });

/** Each event as {@link readFieldsSql} reads it, in order: `problem` and one column per field. */
async function readInSql(reads: EventReads, events: readonly JsonObject[]): Promise<Record<string, unknown>[]> {
  const rows = events.map((event, i) => sql`(${i}::int, ${event['kind']}::text, ${stringifyJson(event)}::json)`);
  const read = readFieldsSql(reads, { kind: sql`e.kind`, payload: sql`e.payload`, standIn: sql<boolean>`false` });
  const { rows: found } = await sql<Record<string, unknown>>`
    SELECT r.* FROM (VALUES ${sql.join(rows)}) AS e(i, kind, payload) CROSS JOIN LATERAL ${read} AS r ORDER BY e.i`.execute(testDb.db);
  return found;
}

describe('defineEventReads', () => {
  it.each(['session_id', 'seq', 'kind', 'recorded_at', 'payload', 'payload_text', 'stand_in', 'position', 'prev_seq', 'needs_log', 'problem', 'rank', 'target_seq', 'log_events', 'missing_seq', 'hole'])(
    "refuses a field named %s, a column of the projector's rows",
    (name) => {
      expect(() => defineEventReads({ noted: { [name]: field.string() } })).toThrow(`event reads: field "${name}" of noted cannot be read under its own name (a column of the projector's rows)`);
    },
  );
});

describe('kinds read without fields', () => {
  it('read as kinds alone, in memory and in SQL', async () => {
    const reads = defineEventReads({ suspended: {}, resumed: {} });
    const events: JsonObject[] = [{ kind: 'suspended', turn: 'x' }, { kind: 'resumed' }, { kind: 'page_in' }];
    expect(events.map((event) => readEvent(reads, event))).toEqual([{ problem: null, fields: {} }, { problem: null, fields: {} }, undefined]);
    expect(await readInSql(reads, events)).toEqual([{ problem: null }, { problem: null }, { problem: null }]);
  });
});

describe('readKindsSql', () => {
  it('lists the kinds the reads read, for kind IN (…)', async () => {
    const reads = defineEventReads({ resumed: { turn: field.u32() }, "it's": { turn: field.u32() } });
    const { rows } = await sql<{ kind: string }>`
      SELECT kind FROM (VALUES ('resumed'), ('it''s'), ('suspended'), ('toString')) AS e(kind) WHERE kind IN (${readKindsSql(reads)})`.execute(testDb.db);
    expect(rows.map((row) => row.kind)).toEqual(['resumed', "it's"]);
  });
});

describe('a u64', () => {
  it('reads as a number, or a bigint above 2^53, in memory and as numeric in SQL', async () => {
    const reads = defineEventReads({ run_terminal: { total_tokens: field.u64() } });
    const events = [
      { kind: 'run_terminal', total_tokens: 3 },
      { kind: 'run_terminal', total_tokens: 18446744073709551615n },
      { kind: 'run_terminal', total_tokens: 18446744073709551616n },
      { kind: 'run_terminal', total_tokens: -1 },
    ];
    expect(events.map((event) => readEvent(reads, event))).toEqual([
      { problem: null, fields: { total_tokens: 3 } },
      { problem: null, fields: { total_tokens: 18446744073709551615n } },
      { problem: 'field "total_tokens": expected a u64 (an integer 0..18446744073709551615), got 18446744073709551616' },
      { problem: 'field "total_tokens": expected a u64 (an integer 0..18446744073709551615), got -1' },
    ]);
    expect(await readInSql(reads, events)).toEqual([
      { problem: null, total_tokens: '3' },
      { problem: null, total_tokens: '18446744073709551615' },
      { problem: 'field "total_tokens": expected a u64 (an integer 0..18446744073709551615), got 18446744073709551616', total_tokens: null },
      { problem: 'field "total_tokens": expected a u64 (an integer 0..18446744073709551615), got -1', total_tokens: null },
    ]);
  });
});

describe('a default', () => {
  it('reads the same in memory and in SQL, whatever its strings hold', async () => {
    const awkward = ["it's", 'back\\slash', 'new\nline', '"quoted"', '{a,b}', 'NULL', '', 'é 😀'];
    const reads = defineEventReads({
      noted: { tags: field.strings().or(awkward), none: field.strings().or([]), note: field.string().or(awkward.join('')), turn: field.u32().or(7) },
    });
    const expected = { tags: awkward, none: [], note: awkward.join(''), turn: 7 };
    expect(readEvent(reads, { kind: 'noted' })).toEqual({ problem: null, fields: expected });
    expect(await readInSql(reads, [{ kind: 'noted' }])).toEqual([{ problem: null, ...expected }]);
  });

  it('must be a value of its field type that SQL text can hold', () => {
    expect(() => defineEventReads({ noted: { turn: field.u32().or(-1) } })).toThrow(
      'event reads: the default of noted: field "turn": expected a u32 (an integer 0..4294967295), got -1',
    );
    expect(() => defineEventReads({ noted: { tags: field.strings().or(['a', 'b\u0000']) } })).toThrow(
      'event reads: the default of noted: field "tags[1]": contains U+0000 or a lone surrogate, which PostgreSQL cannot store',
    );
  });
});

describe('names of Object.prototype', () => {
  const prototypeKinds = ['toString', 'constructor', '__proto__', 'hasOwnProperty'];

  it('are kinds like any other the reads do not name, in memory and in SQL', async () => {
    const reads = defineEventReads({ noted: { turn: field.u32() } });
    for (const kind of prototypeKinds) expect(readEvent(reads, { kind, turn: 'x' }), kind).toBeUndefined();
    const inSql = await readInSql(reads, prototypeKinds.map((kind) => ({ kind, turn: 'x' })));
    expect(inSql).toEqual(prototypeKinds.map(() => ({ problem: null, turn: null })));
  });

  it('are fields like any other, read from an event that is a plain object', async () => {
    const reads = defineEventReads({ noted: { constructor: field.string().orNull(), toString: field.string().or('none') }, other: { turn: field.u32() } });
    expect(readEvent(reads, { kind: 'noted' })).toEqual({ problem: null, fields: { constructor: null, toString: 'none' } });
    expect(readEvent(reads, { kind: 'other', turn: 1 })).toEqual({ problem: null, fields: { turn: 1 } });
    expect(await readInSql(reads, [{ kind: 'noted' }, { kind: 'other', turn: 1 }])).toEqual([
      { problem: null, constructor: null, toString: 'none', turn: null },
      { problem: null, constructor: null, toString: null, turn: 1 },
    ]);
  });

  it('are kinds the OS snapshot passes over, projected or folded', async () => {
    const projected = await createTestDatabase();
    try {
      await new EventStore(projected.db).append('prototype-kinds', [
        ...prototypeKinds.map((kind) => ({ kind, turn: 'x' })),
        { kind: 'suspended', turn: 1, reason: 'ask_user' },
        { kind: 'page_in', turn: 2, entry_count: 1 },
      ]);
      expect(await osSnapshotProjector(projected.db).catchUp()).toMatchObject({ eventsApplied: 6, stopped: 0 });
      const [compared] = await compareWithFold(projected.db, ['prototype-kinds']);
      expect(compared?.sql).toMatchObject({ lastSeq: 5, stopped: null, snapshot: { page_in_count: 1, last_suspend: { turn: 1, reason: 'ask_user', pending_calls: [] } } });
      expect(compared?.sql).toEqual(compared?.fold);
    } finally {
      await projected.drop();
    }
  });
});
