import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { CorruptEventError, EventStore, PostgresSessionLog, verifyOsSnapshots } from '../../src/index.js';
import { osSnapshotProjector } from '../support/projector-harness.js';
import { writeAroundChecks } from '../support/write-around-checks.js';
import { onCitus, useTestDatabase } from '../support/test-database.js';

/**
 * Library reads of a log holding a row no writer of os-audit stores (a hostile writer could
 * once): each fails with a `CorruptEventError` naming the session and the seq, never a bare
 * `SyntaxError` or a value that is no event.
 */
const testDb = useTestDatabase();

const pageIn = (turn: number) => ({ kind: 'page_in', turn, entry_count: 1 });

/**
 * Each session: two events appended by the store, then its corrupt row at seq 2, whose stored
 * text is its `payload_text` (a CHECK keeps `payload` an object of the row's kind).
 */
const corruptRows: { name: string; row: { sessionId: string; payloadText: string }; problem: string }[] = [
  {
    name: 'a stored text that is not JSON',
    row: { sessionId: 'not-json', payloadText: 'not json at all' },
    problem: "the stored event is not JSON: unexpected character 'o' at column 2",
  },
  {
    name: 'a stored text that is not an object',
    row: { sessionId: 'not-object', payloadText: '[1,2]' },
    problem: 'the stored event is not a JSON object: it is an array of 2 items',
  },
  {
    name: "a stored text of another kind than its row's",
    row: { sessionId: 'other-kind', payloadText: '{"kind":"compressed","turn":3}' },
    problem: 'the stored event\'s kind is the string "compressed", not its row\'s "page_in"',
  },
  {
    name: 'a stored text without a kind',
    row: { sessionId: 'no-kind', payloadText: '{"turn":3}' },
    problem: 'the stored event has no kind (its row\'s is "page_in")',
  },
];

/** Every trigger of the store's tables with its `tgenabled`, in one line. */
const TRIGGER_STATES = `SELECT string_agg(format('%s.%s %s', tgrelid::regclass, tgname, tgenabled), ', ' ORDER BY tgrelid::regclass::text, tgname)
  FROM pg_trigger WHERE tgrelid::regclass::text ~ '^(sessions|session_events)(_[0-9]+)?$'`;

/** The triggers' states here, and on Citus those of the shards on the workers (where they fire). */
async function triggerStates(): Promise<unknown[]> {
  const { rows } = await sql.raw(TRIGGER_STATES).execute(testDb.db);
  if (!onCitus) return rows;
  const { rows: shards } = await sql`SELECT result FROM run_command_on_workers(${TRIGGER_STATES}) ORDER BY nodeport`.execute(testDb.db);
  return [...rows, ...shards];
}

let triggersBefore: unknown[];

beforeAll(async () => {
  triggersBefore = await triggerStates();
  const store = new EventStore(testDb.db);
  for (const { row } of corruptRows) {
    await store.append(row.sessionId, [pageIn(1), pageIn(2)]);
    await writeAroundChecks(testDb.db, { ...row, seq: 2, kind: 'page_in', payload: JSON.stringify(pageIn(3)) });
  }
});

it('writes the rows leaving every trigger as it was', async () => {
  expect(await triggerStates()).toEqual(triggersBefore);
});

describe.each(corruptRows)('a log holding $name', ({ row, problem }) => {
  const corrupt = { name: 'CorruptEventError', sessionId: row.sessionId, seq: 2, problem, message: `session "${row.sessionId}", seq 2: ${problem}` };

  it('fails EventStore.readSession at that event, naming the session and the seq', async () => {
    const read: number[] = [];
    const reading = (async () => {
      for await (const stored of new EventStore(testDb.db).readSession(row.sessionId)) read.push(stored.seq);
    })();
    await expect(reading).rejects.toThrow(CorruptEventError);
    await expect(reading).rejects.toMatchObject(corrupt);
    expect(read).toEqual([0, 1]);
  });

  it('fails PostgresSessionLog.read naming the session and the seq, with exact values as readSession', async () => {
    await expect(new PostgresSessionLog(testDb.db, { values: 'exact' }).read(row.sessionId)).rejects.toMatchObject(corrupt);
    await expect(new PostgresSessionLog(testDb.db).read(row.sessionId)).rejects.toMatchObject({ name: corrupt.name, sessionId: row.sessionId, seq: 2 });
  });

  it('is still given as it is stored by readSessionText, which does not read it as an event', async () => {
    const texts: string[] = [];
    for await (const stored of new EventStore(testDb.db).readSessionText(row.sessionId, { fromSeq: 2 })) texts.push(stored.text);
    expect(texts).toEqual([row.payloadText]);
  });
});

it('is reported by verifyOsSnapshots for each such session, which verifies every other one', async () => {
  await new EventStore(testDb.db).append('clean', [pageIn(1)]);
  await osSnapshotProjector(testDb.db).catchUp();
  const report = await verifyOsSnapshots(testDb.db, { all: true });
  const bySession = (a: { sessionId: string }, b: { sessionId: string }) => a.sessionId.localeCompare(b.sessionId);
  expect({ ...report, corrupt: report.corrupt.sort(bySession) }).toEqual({
    checked: corruptRows.length + 1,
    mismatches: [],
    corrupt: corruptRows.map(({ row, problem }) => ({ sessionId: row.sessionId, seq: 2, problem })).sort(bySession),
    pending: [],
    snapshotsCompared: true,
  });
});
