import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { storeIsDistributed } from '../../src/db/distributed-store.js';
import { importLogs } from '../../src/import/import-logs.js';
import { EventStore } from '../../src/store/event-store.js';
import { type FolderDifference, verifyAgainstFolder } from '../../src/verify/verify-against-folder.js';
import { SDK_LOG_FIXTURE } from '../support/journal-folder.js';
import { sampleEvent, sessionLine, useTempDir, writeSessionFile } from '../support/log-files.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { useTestDatabase } from '../support/test-database.js';

/**
 * `verify --against DIR`: a log folder checked against the database, session by session, after
 * an import (which must leave it clean) and after the log or the folder changed.
 */
const testDb = useTestDatabase({ perTest: true });
const tempDir = useTempDir('os-audit-verify-against-');
const cli = (args: string[]) => runCliInProcess(args, { env: { DATABASE_URL: testDb.url } });

/** The seed SDK's (5c2a79c) layout: `<session_id>.jsonl` files alone. */
const SEED_LAYOUT_FOLDER = fileURLToPath(new URL('../../samples/', import.meta.url));

async function imported(folder: string): Promise<void> {
  const report = await importLogs(new EventStore(testDb.db), folder);
  expect(report.failures).toEqual([]);
}

/**
 * Rewrites one stored event as the owner may, with the store's triggers (whichever there are)
 * off around the UPDATE, in one transaction. On Citus the triggers are the shards', which an
 * ALTER on the coordinator reaches once `citus.enable_unsafe_triggers` is on (else it is refused).
 */
async function changeStoredEvent(sessionId: string, seq: number, text: string): Promise<void> {
  await testDb.db.transaction().execute(async (trx) => {
    if (await storeIsDistributed(trx)) await sql`SET LOCAL citus.enable_unsafe_triggers = on`.execute(trx);
    await sql`ALTER TABLE session_events DISABLE TRIGGER USER`.execute(trx);
    await sql`UPDATE session_events SET payload = ${text}::json WHERE session_id = ${sessionId} AND seq = ${seq}`.execute(trx);
    await sql`ALTER TABLE session_events ENABLE TRIGGER USER`.execute(trx);
  });
}

const cleanCounts = (sessions: number) => ({ clean: sessions, differs: 0, missing: 0, extra: 0, unreadable: 0 });
const fiveEvents = () => Array.from({ length: 5 }, (_, seq) => sessionLine(seq, sampleEvent(seq)));

describe('verifyAgainstFolder after an import', () => {
  it("finds the seed SDK's folder clean, whatever the events compared per query", async () => {
    await imported(SEED_LAYOUT_FOLDER);
    for (const chunkSize of [7, undefined]) {
      expect(await verifyAgainstFolder(testDb.db, SEED_LAYOUT_FOLDER, { chunkSize })).toEqual({
        sessions: 14,
        counts: cleanCounts(14),
        differences: [],
        // The older-format samples' folder: import skips it too.
        ignoredEntries: ['older-format'],
      });
    }
    expect(await cli(['verify', '--against', SEED_LAYOUT_FOLDER])).toEqual({
      code: 0,
      stdout: `verified 14 sessions against ${SEED_LAYOUT_FOLDER}: 14 clean, 0 differing, 0 missing, 0 extra, 0 unreadable\n`,
      stderr: 'not compared: older-format (no <session_id>.jsonl files)\n',
    });
  });

  it("finds the v0.2.60 SDK's folder clean, saying that its kernel journal is not compared", async () => {
    await imported(SDK_LOG_FIXTURE);
    expect(await verifyAgainstFolder(testDb.db, SDK_LOG_FIXTURE)).toEqual({
      sessions: 2,
      counts: cleanCounts(2),
      differences: [],
      ignoredEntries: ['kernel-journal'],
    });
    expect(await cli(['verify', '--against', SDK_LOG_FIXTURE])).toEqual({
      code: 0,
      stdout: `verified 2 sessions against ${SDK_LOG_FIXTURE}: 2 clean, 0 differing, 0 missing, 0 extra, 0 unreadable\n`,
      stderr: 'not compared: kernel-journal (no <session_id>.jsonl files)\n',
    });
  });

  it('compares what import stores: white space dropped, stand-ins by their exact text, lines in any order, empty logs', async () => {
    const dir = tempDir();
    writeSessionFile(dir, 'spaced', ['{ "seq": 0, "event": { "kind": "page_in", "turn": 1, "entry_count": 2 } }\r']);
    writeSessionFile(dir, 'stand-in', [sessionLine(0, '{"kind":"x_note","note":"a\\u0000b"}'), sessionLine(1, '{"kind":"x_note","note":"\\ud800"}')]);
    writeSessionFile(dir, 'shuffled', [sessionLine(2, sampleEvent(2)), '', sessionLine(0, sampleEvent(0)), sessionLine(1, sampleEvent(1)), sessionLine(1, sampleEvent(1))]);
    writeSessionFile(dir, 'not-yet', []);
    await imported(dir);
    expect(await verifyAgainstFolder(testDb.db, dir, { chunkSize: 2 })).toMatchObject({ sessions: 4, counts: cleanCounts(4), differences: [] });

    // The same readable stand-in, another exact text: U+0000 where a lone surrogate was.
    writeSessionFile(dir, 'stand-in', [sessionLine(0, '{"kind":"x_note","note":"a\\u0000b"}'), sessionLine(1, '{"kind":"x_note","note":"\\u0000"}')]);
    expect((await verifyAgainstFolder(testDb.db, dir)).differences).toEqual([
      { sessionId: 'stand-in', kind: 'differs', seq: 1, file: path.join(dir, 'stand-in.jsonl'), line: 2, reason: 'the database holds another event' },
    ]);
  });
});

describe('verifyAgainstFolder where the log and the folder part', () => {
  /** One session of the folder broken each way, and one left clean among them. */
  async function brokenFolder(): Promise<{ dir: string; expected: FolderDifference[] }> {
    const dir = tempDir();
    const file = (sessionId: string) => path.join(dir, `${sessionId}.jsonl`);
    for (const sessionId of ['a-changed-in-db', 'b-changed-in-file', 'c-longer-file', 'd-longer-log', 'e-bad-line', 'f-clean', 'g-only-in-db']) {
      writeSessionFile(dir, sessionId, fiveEvents());
    }
    await imported(dir);

    await changeStoredEvent('a-changed-in-db', 3, JSON.stringify({ ...sampleEvent(3), reason: 'policy' }));
    const changed = fiveEvents();
    changed[2] = sessionLine(2, { ...sampleEvent(2), turn: 9 });
    writeSessionFile(dir, 'b-changed-in-file', changed);
    writeSessionFile(dir, 'c-longer-file', [...fiveEvents(), sessionLine(5, sampleEvent(5))]);
    await new EventStore(testDb.db).append('d-longer-log', [sampleEvent(5)]);
    const bad = fiveEvents();
    bad[2] = '{"seq":2,"event":{"kind":"page_in",}';
    writeSessionFile(dir, 'e-bad-line', bad);
    rmSync(file('g-only-in-db'));
    writeSessionFile(dir, 'h-only-in-folder', fiveEvents());
    writeFileSync(path.join(dir, 'notes.txt'), 'not a log');

    const expected: FolderDifference[] = [
      { sessionId: 'a-changed-in-db', kind: 'differs', seq: 3, file: file('a-changed-in-db'), line: 4, reason: 'the database holds another event' },
      { sessionId: 'b-changed-in-file', kind: 'differs', seq: 2, file: file('b-changed-in-file'), line: 3, reason: 'the database holds another event' },
      { sessionId: 'c-longer-file', kind: 'differs', seq: 5, file: file('c-longer-file'), line: 6, reason: 'not in the database, whose log ends at seq 4' },
      { sessionId: 'd-longer-log', kind: 'differs', seq: 5, file: file('d-longer-log'), line: null, reason: 'in the database (whose log ends at seq 5), not in the file' },
      { sessionId: 'e-bad-line', kind: 'unreadable', seq: null, file: file('e-bad-line'), line: 3, reason: expect.stringMatching(/^invalid JSON: /) as string },
      { sessionId: 'h-only-in-folder', kind: 'missing', seq: 0, file: file('h-only-in-folder'), line: 1, reason: 'the session is not in the database' },
      { sessionId: 'g-only-in-db', kind: 'extra', seq: 0, file: null, line: null, reason: 'in the database (whose log ends at seq 4), not in the folder' },
    ];
    return { dir, expected };
  }

  it('reports every session that is not clean, each at its first differing seq, whatever the events compared per query', async () => {
    const { dir, expected } = await brokenFolder();
    for (const chunkSize of [1, 3, undefined]) {
      const report = await verifyAgainstFolder(testDb.db, dir, { chunkSize });
      expect(report, `chunkSize ${chunkSize}`).toEqual({
        sessions: 8,
        counts: { clean: 1, differs: 4, missing: 1, extra: 1, unreadable: 1 },
        differences: expected,
        ignoredEntries: ['notes.txt'],
      });
    }
    const told: FolderDifference[] = [];
    const report = await verifyAgainstFolder(testDb.db, dir, { onDifference: (difference) => void told.push(difference) });
    expect({ told, kept: report.differences }).toEqual({ told: expected, kept: [] });
  });

  it('prints a line for each session that is not clean, then the counts, and exits 1', async () => {
    const { dir } = await brokenFolder();
    const file = (sessionId: string) => path.join(dir, `${sessionId}.jsonl`);
    const run = await cli(['verify', '--against', dir]);
    expect(run.code).toBe(1);
    expect(run.stdout.split('\n')).toEqual([
      `session "a-changed-in-db": differs at seq 3 (${file('a-changed-in-db')}:4): the database holds another event`,
      `session "b-changed-in-file": differs at seq 2 (${file('b-changed-in-file')}:3): the database holds another event`,
      `session "c-longer-file": differs at seq 5 (${file('c-longer-file')}:6): not in the database, whose log ends at seq 4`,
      `session "d-longer-log": differs at seq 5 (${file('d-longer-log')}): in the database (whose log ends at seq 5), not in the file`,
      expect.stringMatching(new RegExp(`^session "e-bad-line": unreadable \\(${file('e-bad-line').replace(/[.]/g, '\\.')}:3\\): invalid JSON: `)),
      `session "h-only-in-folder": missing at seq 0 (${file('h-only-in-folder')}:1): the session is not in the database`,
      'session "g-only-in-db": extra at seq 0: in the database (whose log ends at seq 4), not in the folder',
      `verified 8 sessions against ${dir}: 1 clean, 4 differing, 1 missing, 1 extra, 1 unreadable`,
      '',
    ]);
    expect(run.stderr).toBe('not compared: notes.txt (no <session_id>.jsonl files)\nos-audit: 7 of 8 sessions are not stored as the folder has them\n');
  });
});

describe('os-audit verify --against: mistakes', () => {
  it('refuses --against beside sessions or --projection (exit 2), and a path that is no folder (exit 1)', async () => {
    const dir = tempDir();
    expect(await cli(['verify', 's1', '--against', dir])).toMatchObject({ code: 2, stderr: expect.stringContaining('one of them') });
    expect(await cli(['verify', '--against', dir, '--projection', 'os_snapshot'])).toMatchObject({ code: 2, stderr: expect.stringContaining('--projection does not apply') });
    const file = writeSessionFile(dir, 's1', []);
    expect(await cli(['verify', '--against', file])).toEqual({
      code: 1,
      stdout: '',
      stderr: `os-audit: ${file} is not a directory: give a runtime log folder of <session_id>.jsonl files\n`,
    });
  });
});
