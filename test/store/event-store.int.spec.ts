import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { DB } from '../../src/db/schema.js';
import { JsonFloat, type JsonValue } from '../../src/json/json-value.js';
import { parseJson } from '../../src/json/parse-json.js';
import { ConcurrencyError } from '../../src/store/concurrency-error.js';
import { encodeEventText, encodeEventValue } from '../../src/events/encode-event.js';
import { EventStore } from '../../src/store/event-store.js';
import { InvalidEventError } from '../../src/events/invalid-event-error.js';
import { emptyRows, pushRow } from '../../src/store/sql/event-rows.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();
const store = () => new EventStore(testDb.db);

const pageIn = (turn: number) => ({ kind: 'page_in', turn, entry_count: 1 });

async function readAll(sessionId: string, options?: { fromSeq?: number; pageSize?: number }) {
  const events = [];
  for await (const stored of store().readSession(sessionId, options)) events.push(stored);
  return events;
}

async function countRows(sessionId: string): Promise<number> {
  const row = await testDb.db
    .selectFrom('session_events')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('session_id', '=', sessionId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

describe('append', () => {
  it('assigns gap-free seqs from 0 and continues where the log ends', async () => {
    expect(await store().append('append-1', [pageIn(1), pageIn(2), pageIn(3)])).toEqual([0, 1, 2]);
    expect(await store().append('append-1', [pageIn(4)])).toEqual([3]);
    expect(await store().lastSeq('append-1')).toBe(3);
    const rows = await testDb.db.selectFrom('session_events').selectAll().where('session_id', '=', 'append-1').orderBy('seq').execute();
    expect(rows.map((row) => [row.seq, row.kind, row.turn])).toEqual([
      [0, 'page_in', 1],
      [1, 'page_in', 2],
      [2, 'page_in', 3],
      [3, 'page_in', 4],
    ]);
    expect(new Set(rows.slice(0, 3).map((row) => row.transaction_id)).size).toBe(1);
  });

  it('keeps the head row in step with the log', async () => {
    await store().append('append-head', [pageIn(1), pageIn(2)]);
    const head = await testDb.db.selectFrom('sessions').selectAll().where('session_id', '=', 'append-head').executeTakeFirstOrThrow();
    expect(head.last_seq).toBe(1);
    expect(head.first_recorded_at.getTime()).toBeLessThanOrEqual(head.last_recorded_at.getTime());
  });

  it('checks the expected seq: -1 for a new session, the last seq after that', async () => {
    expect(await store().append('expect-1', [pageIn(1)], { expectedSeq: -1 })).toEqual([0]);
    expect(await store().append('expect-1', [pageIn(2), pageIn(3)], { expectedSeq: 0 })).toEqual([1, 2]);

    const stale = store().append('expect-1', [pageIn(9)], { expectedSeq: 0 });
    await expect(stale).rejects.toBeInstanceOf(ConcurrencyError);
    await expect(stale).rejects.toMatchObject({ sessionId: 'expect-1', expectedSeq: 0, actualSeq: 2 });
    await expect(store().append('expect-1', [pageIn(9)], { expectedSeq: -1 })).rejects.toMatchObject({ expectedSeq: -1, actualSeq: 2 });
    await expect(store().append('expect-new', [pageIn(9)], { expectedSeq: 4 })).rejects.toMatchObject({ expectedSeq: 4, actualSeq: -1 });
    expect(await countRows('expect-1')).toBe(3);
    expect(await countRows('expect-new')).toBe(0);
  });

  it('rejects the whole batch when one event is not an object with a string kind, naming session, event and field', async () => {
    const batch = [pageIn(1), { turn: 2 }, pageIn(3)];
    const attempt = store().append('invalid-1', batch);
    await expect(attempt).rejects.toBeInstanceOf(InvalidEventError);
    await expect(attempt).rejects.toThrow(/session "invalid-1", event #1: field "kind": required field is missing/);
    expect(await countRows('invalid-1')).toBe(0);
    await expect(store().append('invalid-1', [['not', 'an', 'object']])).rejects.toThrow(/event #0: the event: expected an object, got an array/);
    await expect(store().append('invalid-1', [{ kind: '' }])).rejects.toThrow(/field "kind": expected a non-empty string, got the string ""/);
    await expect(store().append('invalid-1', [{ kind: 7 }])).rejects.toThrow(/field "kind": expected a non-empty string, got 7/);
    expect(await countRows('invalid-1')).toBe(0);
  });

  it('stores what the runtime wrote whatever its other fields; strict mode refuses what the Rust core would', async () => {
    const events: JsonValue[] = [
      { kind: 'suspended', turn: -1, reason: 'ask_user' },
      { kind: 'llm_completed', turn: 1, content: 'hi', tool_calls: [] },
      { kind: 'Not Snake Case', anything: [1, 'x'] },
    ];
    expect(await store().append('lenient-1', events)).toEqual([0, 1, 2]);
    expect((await readAll('lenient-1')).map((stored) => stored.event)).toEqual(events);
    const strict = store().append('strict-1', [events[1]!], { strict: true });
    await expect(strict).rejects.toThrow(/session "strict-1", event #0: field "message": required field is missing/);
    await expect(store().append('strict-1', [events[2]!], { strict: true })).rejects.toThrow(/unknown kind "Not Snake Case"/);
    expect(await countRows('strict-1')).toBe(0);
  });

  it('stores a value as JSON.stringify writes it (undefined left out, NaN null, toJSON called), integers and floats exactly', async () => {
    const sdkEvent = { kind: 'page_out', turn: 1, summary: undefined, message_count: 2 } as unknown as JsonValue;
    expect(await store().append('undefined-1', [sdkEvent])).toEqual([0]);
    expect((await readAll('undefined-1'))[0]!.event).toEqual({ kind: 'page_out', turn: 1, message_count: 2 });

    const event = { kind: 'llm_completed', turn: 1, message: { score: Number.NaN, at: new Date(0) }, tokens: 2n ** 64n, cost: new JsonFloat('1.0') } as unknown as JsonValue;
    expect(await store().append('nan-1', [event])).toEqual([0]);
    expect((await readAll('nan-1'))[0]!.text).toBe('{"kind":"llm_completed","turn":1,"message":{"score":null,"at":"1970-01-01T00:00:00.000Z"},"tokens":18446744073709551616,"cost":1.0}');
  });

  it('stores U+0000 anywhere, and refuses session ids that text cannot hold', async () => {
    expect(await store().append('nul-1', [{ kind: 'suspended', turn: 1, reason: 'ask\u0000user' }])).toEqual([0]);
    expect((await readAll('nul-1'))[0]!.event.reason).toBe('ask\u0000user');
    await expect(store().append('bad\u0000id', [pageIn(1)])).rejects.toThrow(/session id/);
    await expect(store().append('', [pageIn(1)])).rejects.toThrow(/session id/);
    // Read back, a lone surrogate would reach the server as U+FFFD: another session.
    await store().append('lone-\ufffd', [pageIn(1)]);
    await expect(readAll('lone-\ud800')).rejects.toThrow(/session id/);
    await expect(store().lastSeq('lone-\ud800')).rejects.toThrow(/session id/);
  });

  it('serializes concurrent writers of one session without losing or repeating a seq', async () => {
    const writers = Array.from({ length: 20 }, (_, writer) =>
      store().append('concurrent-1', Array.from({ length: 10 }, (_, i) => ({ kind: 'page_in', turn: writer, entry_count: i }))),
    );
    const seqs = (await Promise.all(writers)).flat().sort((a, b) => a - b);
    expect(seqs).toEqual(Array.from({ length: 200 }, (_, i) => i));
    const events = await readAll('concurrent-1');
    // Each batch is contiguous: its ten events stand together, in order.
    for (let start = 0; start < 200; start += 10) {
      const batch = events.slice(start, start + 10).map((stored) => stored.event);
      expect(new Set(batch.map((event) => event.turn)).size).toBe(1);
      expect(batch.map((event) => event.entry_count)).toEqual(Array.from({ length: 10 }, (_, i) => i));
    }
  });

  it('keeps a large append (several statements) contiguous among concurrent writers, all or nothing', async () => {
    const batch = (writer: number, length: number) => Array.from({ length }, (_, i) => ({ kind: 'page_in', turn: writer, entry_count: i }));
    const lengths = [700, 1, 251, 1000, 30, 600];
    const seqs = await Promise.all(lengths.map((length, writer) => store().append('large-1', batch(writer, length))));
    const events = await readAll('large-1');
    expect(events.map((stored) => stored.seq)).toEqual(Array.from({ length: 2582 }, (_, i) => i));
    lengths.forEach((length, writer) => {
      expect(seqs[writer]).toEqual(Array.from({ length }, (_, i) => seqs[writer]![0]! + i));
      expect(events.slice(seqs[writer]![0], seqs[writer]![0]! + length).map((stored) => stored.event)).toEqual(batch(writer, length));
    });

    const refused: JsonValue[] = batch(9, 1000);
    refused[900] = { turn: 1 };
    await expect(store().append('large-2', refused)).rejects.toThrow(/session "large-2", event #900: field "kind"/);
    expect(await countRows('large-2')).toBe(0);
    expect(await store().lastSeq('large-2')).toBe(-1);
  });

  it('stores a large append (through COPY) exactly as small appends store the same events', async () => {
    const tricky = (i: number): JsonValue => ({
      kind: i % 3 === 0 ? 'suspended' : 'llm_completed',
      turn: i,
      ...(i % 3 === 0
        ? { reason: `tab\there, line\nbreak, back\\slash, quote " ${i}`, pending_calls: [`c\r${i}`] }
        : { message: { content: `nul \u0000, surrogate \ud800, ψ ${i}`, score: new JsonFloat('1.50'), big: 18446744073709551615n } }),
    });
    const events = Array.from({ length: 300 }, (_, i) => tricky(i));
    const large = 'copy\t\\ψ\n1';
    expect(await store().append(large, events)).toEqual(Array.from({ length: 300 }, (_, i) => i));
    for (const event of events) await store().append('copy-small-1', [event]);
    const rows = (sessionId: string) =>
      sql<{ seq: number; kind: string; turn: number; payload: string; payload_text: string | null }>`
        SELECT seq, kind, turn, payload::text AS payload, payload_text FROM session_events
        WHERE session_id = ${sessionId} ORDER BY seq`.execute(testDb.db);
    const [copied, inserted] = [(await rows(large)).rows, (await rows('copy-small-1')).rows];
    expect(copied).toHaveLength(300);
    expect(copied).toEqual(inserted);
    expect((await readAll(large)).map((stored) => stored.event)).toEqual(events);
  });

  it('stores sequenced rows of a transaction (through COPY) exactly as one statement stores them', async () => {
    const tricky = (i: number): JsonValue => ({
      kind: 'llm_completed',
      turn: i,
      message: { content: `tab\there, line\nbreak, back\\slash, nul \u0000, surrogate \ud800 ${i}`, score: new JsonFloat('1.50') },
    });
    // Three sessions interleaved, 300 rows: more than one statement's worth, so COPY.
    const rowsFor = (prefix: string) => {
      const rows = emptyRows();
      for (let i = 0; i < 300; i++) pushRow(rows, `${prefix}-${i % 3}`, Math.floor(i / 3), encodeEventValue(tricky(i), {}));
      return rows;
    };
    await store().transaction((transaction) => transaction.appendSequenced(rowsFor('seq-copy')));
    await testDb.db.transaction().execute((trx) => new EventStore(trx).appendSequenced(rowsFor('seq-insert')));
    const stored = (prefix: string) =>
      sql<{ session: string; seq: number; kind: string; turn: number; payload: string; payload_text: string | null }>`
        SELECT right(session_id, 1) AS session, seq, kind, turn, payload::text AS payload, payload_text FROM session_events
        WHERE session_id LIKE ${`${prefix}-%`} ORDER BY session_id, seq`.execute(testDb.db);
    const [copied, inserted] = [(await stored('seq-copy')).rows, (await stored('seq-insert')).rows];
    expect(copied).toHaveLength(300);
    expect(copied).toEqual(inserted);
    expect(await store().lastSeq('seq-copy-2')).toBe(99);

    // A session that does not continue its stored log: nothing of the transaction is kept.
    const clash = rowsFor('seq-clash');
    await store().append('seq-clash-1', [{ kind: 'page_in', turn: 1, entry_count: 1 }]);
    const attempt = store().transaction((transaction) => transaction.appendSequenced(clash));
    await expect(attempt).rejects.toBeInstanceOf(ConcurrencyError);
    await expect(attempt).rejects.toThrow(/seq-clash-1/);
    expect(await countRows('seq-clash-0')).toBe(0);
    expect(await countRows('seq-clash-1')).toBe(1);
  });

  it('returns nothing and stores nothing for an empty batch', async () => {
    expect(await store().append('empty-1', [])).toEqual([]);
    expect(await store().lastSeq('empty-1')).toBe(-1);
  });
});

describe('readSession', () => {
  it('gives back exact values: u64 above 2^53, floats, U+0000, lone surrogates, extra fields', async () => {
    const events = parseJson(
      '[{"kind":"run_terminal","reason":"done","turns_used":4294967295,"total_tokens":18446744073709551615},' +
        '{"kind":"llm_completed","turn":1,"message":{"content":"a\\u0000b","score":1.50,"big":-123456789012345678901234567890}},' +
        '{"kind":"tool_completed","turn":2,"results":[{"out":"\\ud800 lone","k\\u0000ey":"v"}],"x_extra":{"nested":[1,2,3]}},' +
        '{"kind":"workflow_completed","turn":7,"anything":true}]',
    );
    await store().append('exact-1', events as never[]);
    const stored = await readAll('exact-1');
    expect(stored.map((row) => row.event)).toEqual(events);
    expect(stored[0]!.event.total_tokens).toBe(18446744073709551615n);
    expect((stored[1]!.event.message as { score: JsonFloat }).score).toBeInstanceOf(JsonFloat);
    expect(stored.map((row) => row.kind)).toEqual(['run_terminal', 'llm_completed', 'tool_completed', 'workflow_completed']);

    const raw = await sql<{ total: string; content: string; exact: string | null }>`
      SELECT payload->>'total_tokens' AS total, payload #>> '{message,content}' AS content, payload_text AS exact
      FROM session_events WHERE session_id = 'exact-1' ORDER BY seq`.execute(testDb.db);
    expect(raw.rows[0]!.total).toBe('18446744073709551615');
    expect(raw.rows[0]!.exact).toBeNull();
    // Where SQL cannot read a string (U+0000), payload holds an object in its place; payload_text the exact event.
    expect(JSON.parse(raw.rows[1]!.content)).toEqual({ os_audit_unstorable_string: 'a\uFFFDb' });
    expect(raw.rows[1]!.exact).toContain('a\\u0000b');
  });

  it('gives each event back as the JSON text it was written in: key order, number text, escapes (white space between tokens removed)', async () => {
    const written = '{ "turn": 1e2, "kind": "x_custom", "b": -0.0, "a": 1.0, "2": "\\u00e9", "nested": {"z": 1, "a": [18446744073709551615, 0.10]} }';
    const stored = encodeEventText(written, {});
    await store().appendEncoded('as-written', [stored]);
    const texts = [];
    for await (const stored of store().readSessionText('as-written')) texts.push(stored);
    const [text] = texts;
    expect(text!.text).toBe('{"turn":1e2,"kind":"x_custom","b":-0.0,"a":1.0,"2":"\\u00e9","nested":{"z":1,"a":[18446744073709551615,0.10]}}');
    // The turn column holds only a u32 written as an integer.
    expect(text!.kind).toBe('x_custom');
    expect((await testDb.db.selectFrom('session_events').select('turn').where('session_id', '=', 'as-written').executeTakeFirstOrThrow()).turn).toBeNull();
  });

  it('keeps a lone surrogate written as it is (not escaped) in a text, as its escape, where the driver would send U+FFFD', async () => {
    const written = '{"kind":"x\ud800","note":"lone \udc00 and a pair \ud83d\ude00","\ud800key":1}';
    await store().appendEncoded('raw-lone', [encodeEventText(written, { sessionId: 'raw-lone' })]);
    const [stored] = await readAll('raw-lone');
    expect(stored!.text).toBe(JSON.stringify(JSON.parse(written)));
    expect(stored!.text).toBe('{"kind":"x\\ud800","note":"lone \\udc00 and a pair 😀","\\ud800key":1}');
    expect(stored!.event).toEqual(parseJson(written));
    // SQL reads the readable stand-in, as for an escaped lone surrogate.
    const row = await sql<{ kind: string; note: string }>`
      SELECT kind, payload #>> '{note,os_audit_unstorable_string}' AS note FROM session_events WHERE session_id = 'raw-lone'`.execute(testDb.db);
    expect(row.rows).toEqual([{ kind: 'x\ufffd', note: 'lone \ufffd and a pair 😀' }]);
    // A session id cannot keep one at all.
    await expect(store().appendEncoded('raw-lone\udc00', [encodeEventText('{"kind":"x"}', {})])).rejects.toThrow(/session id/);
  });

  it('stores numbers beyond what jsonb holds, and gives them back exactly', async () => {
    const events = parseJson('[{"kind":"x_metrics","huge":1e131072,"tiny":-1e-20000,"ok":2.50}]');
    await store().append('huge-numbers', events as never[]);
    expect((await readAll('huge-numbers')).map((row) => row.event)).toEqual(events);
  });

  it('pages through long logs and starts at fromSeq', async () => {
    await store().append('paged-1', Array.from({ length: 25 }, (_, turn) => pageIn(turn)));
    expect((await readAll('paged-1', { pageSize: 4 })).map((row) => row.seq)).toEqual(Array.from({ length: 25 }, (_, i) => i));
    expect((await readAll('paged-1', { fromSeq: 20, pageSize: 5 })).map((row) => row.seq)).toEqual([20, 21, 22, 23, 24]);
    expect(await readAll('no-such-session')).toEqual([]);
  });
});

describe('on a Kysely of the user\'s own, whose pool reads bigint as strings (pg\'s default)', () => {
  it('reads seqs, positions and heads as numbers, every event in order, and stores sequenced rows', async () => {
    const own = new Kysely<DB>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: testDb.url }) }) });
    try {
      const { rows } = await sql<{ head: unknown }>`SELECT 1::bigint AS head`.execute(own);
      expect(rows[0]!.head).toBe('1');
      const plain = new EventStore(own);
      expect(await plain.append('own-1', Array.from({ length: 25 }, (_, i) => pageIn(i)))).toEqual(Array.from({ length: 25 }, (_, i) => i));
      const read = [];
      // Pages of 2: each next page starts after the last seq read.
      for await (const stored of plain.readSession('own-1', { pageSize: 2 })) read.push(stored);
      expect(read.map((stored) => stored.seq)).toEqual(Array.from({ length: 25 }, (_, i) => i));
      expect(read.every((stored) => typeof stored.position === 'number')).toBe(true);
      expect(read.map((stored) => stored.event)).toEqual(Array.from({ length: 25 }, (_, i) => pageIn(i)));
      expect(await plain.lastSeq('own-1')).toBe(24);
      expect(await plain.lastSeqs(['own-1', 'own-none'])).toEqual(new Map([['own-1', 24]]));

      const sequenced = emptyRows();
      for (let seq = 25; seq < 30; seq++) pushRow(sequenced, 'own-1', seq, encodeEventValue(pageIn(seq), {}));
      await plain.transaction((transaction) => transaction.appendSequenced(sequenced));
      expect(await plain.lastSeq('own-1')).toBe(29);
    } finally {
      await own.destroy();
    }
  });
});

describe('history is append-only in the database itself', () => {
  it.each([
    ['UPDATE', sql`UPDATE session_events SET kind = 'x'`],
    ['DELETE', sql`DELETE FROM session_events`],
    ['TRUNCATE', sql`TRUNCATE session_events`],
    ['DELETE of a session head', sql`DELETE FROM sessions`],
    ['TRUNCATE of session heads', sql`TRUNCATE sessions CASCADE`],
    ['moving a head back', sql`UPDATE sessions SET last_seq = 0 WHERE session_id = 'guarded-1'`],
  ])('refuses %s, even for a superuser and with replication triggers off', async (_name, statement) => {
    await store().append('guarded-1', [pageIn(1), pageIn(2)]);
    await expect(statement.execute(testDb.db)).rejects.toThrow(/append-only|only moves forward/);
    await expect(
      testDb.db.connection().execute(async (connection) => {
        await sql`SET session_replication_role = replica`.execute(connection);
        try {
          await statement.execute(connection);
        } finally {
          await sql`RESET session_replication_role`.execute(connection);
        }
      }),
    ).rejects.toThrow(/append-only|only moves forward/);
    const whoami = await sql<{ superuser: boolean }>`SELECT rolsuper AS superuser FROM pg_roles WHERE rolname = current_user`.execute(testDb.db);
    expect(whoami.rows[0]!.superuser).toBe(true);
    expect(await store().lastSeq('guarded-1')).toBeGreaterThanOrEqual(1);
  });
});

describe('notifications', () => {
  it('wakes listeners once per committed append, and not for a rolled-back one', async () => {
    const listener = new pg.Client({ connectionString: testDb.url });
    await listener.connect();
    const received: string[] = [];
    listener.on('notification', (message) => received.push(message.channel));
    await listener.query('LISTEN os_audit_events_appended');
    try {
      await expect(
        store().transaction(async (transaction) => {
          await transaction.append('notify-1', [pageIn(1)]);
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      await store().append('notify-1', [pageIn(1), pageIn(2), pageIn(3)]);
      await expect.poll(() => received.length).toBe(1);
      expect(received).toEqual(['os_audit_events_appended']);
    } finally {
      await listener.end();
    }
  });
});
