import { beforeAll, describe, expect, it } from 'vitest';
import { EventStore } from '../../src/store/event-store.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { useTestDatabase } from '../support/test-database.js';
import { writeAroundChecks } from '../support/write-around-checks.js';

/**
 * `events` and `verify` over a store holding rows no writer of os-audit stores (a hostile
 * writer could once): neither prints a line that is no event with exit 0, and `verify` names
 * each such session and goes on with the others.
 */
const testDb = useTestDatabase();
const cli = (args: string[]) => runCliInProcess(args, { env: { DATABASE_URL: testDb.url } });

const pageIn = (turn: number) => ({ kind: 'page_in', turn, entry_count: 1 });

beforeAll(async () => {
  const store = new EventStore(testDb.db);
  // Sorted around the corrupt ones, so that `verify --all` reaches sessions after them.
  for (const sessionId of ['a-clean', 'not-json', 'other-kind', 'resumed-twice', 'z-clean']) await store.append(sessionId, [pageIn(1), pageIn(2)]);
  const page = { kind: 'page_in', payload: JSON.stringify(pageIn(3)) };
  await writeAroundChecks(testDb.db, { sessionId: 'not-json', seq: 2, ...page, payloadText: 'not json at all' });
  await writeAroundChecks(testDb.db, { sessionId: 'other-kind', seq: 2, ...page, payloadText: '{"kind":"compressed","turn":3}' });
  // JSON of its kind, but not the event its `payload` holds, which the projector folds: its snapshot differs from its log.
  await writeAroundChecks(testDb.db, { sessionId: 'resumed-twice', seq: 2, kind: 'resumed', payload: '{"kind":"resumed","turn":3}', payloadText: '{"kind":"resumed","turn":4}' });
  expect((await cli(['project', '--once'])).code).toBe(0);
});

describe('os-audit events', () => {
  it('prints the events before a stored text that is not JSON, then fails naming its session and seq', async () => {
    expect(await cli(['events', 'not-json'])).toEqual({
      code: 1,
      stdout: '{"seq":0,"event":{"kind":"page_in","turn":1,"entry_count":1}}\n{"seq":1,"event":{"kind":"page_in","turn":2,"entry_count":1}}\n',
      stderr: `os-audit: session "not-json", seq 2: the stored event is not JSON: unexpected character 'o' at column 2\n`,
    });
    expect(await cli(['events', 'not-json', '--bare', '--from-seq', '2'])).toMatchObject({ code: 1, stdout: '' });
  });

  it('fails at a stored event of another kind than its row', async () => {
    expect(await cli(['events', 'other-kind', '--from-seq', '1'])).toEqual({
      code: 1,
      stdout: '{"seq":1,"event":{"kind":"page_in","turn":2,"entry_count":1}}\n',
      stderr: 'os-audit: session "other-kind", seq 2: the stored event\'s kind is the string "compressed", not its row\'s "page_in"\n',
    });
  });
});

describe('os-audit verify --all', () => {
  it('names each session whose log holds a corrupt event, verifies every other one, and exits 1', async () => {
    const run = await cli(['verify', '--all']);
    expect(run.code).toBe(1);
    for (const projection of ['os_snapshot', 'os_snapshot_v0_2_60']) {
      expect(run.stdout).toContain(
        `${projection}: session "not-json" cannot be verified: seq 2: the stored event is not JSON: unexpected character 'o' at column 2\n` +
          `${projection}: session "other-kind" cannot be verified: seq 2: the stored event's kind is the string "compressed", not its row's "page_in"\n` +
          `${projection}: verified 5 sessions: 1 differs from its log, 2 have a corrupt event in their log\n`,
      );
      expect(run.stdout).toContain(`${projection}: session "resumed-twice" differs from its log:\n`);
    }
    expect(run.stderr).toMatch(/\b2 snapshots differ from their log; 2 sessions have a corrupt event in their log\n$/);
  });

  it('exits 0 for the clean sessions alone', async () => {
    expect(await cli(['verify', 'a-clean', 'z-clean', '--projection', 'os_snapshot'])).toMatchObject({
      code: 0,
      stdout: expect.stringContaining('os_snapshot: verified 2 sessions: 0 differ from their log\n'),
    });
  });
});
