import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { chainStart, eventHash } from '../../src/integrity/event-chain.js';
import { digestText, makeDigest, readDigestBody } from '../../src/integrity/digest.js';
import { verifyEventChain } from '../../src/integrity/verify-event-chain.js';
import { verifyLogAgainstDigest } from '../../src/integrity/verify-digest.js';
import { encodeEventText } from '../../src/events/encode-event.js';
import { EventStore } from '../../src/store/event-store.js';
import { emptyRows, pushRow } from '../../src/store/sql/event-rows.js';
import { importLogs } from '../../src/import/import-logs.js';
import { pastTheTriggers } from '../support/past-the-triggers.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { createTestDatabase, useTestDatabase } from '../support/test-database.js';
import { migrateTo } from '../support/migrate-to.js';
import { migrateToLatest } from '../../src/migrate-to-latest.js';

const testDb = useTestDatabase();
const folders: string[] = [];
afterAll(() => folders.forEach((folder) => rmSync(folder, { recursive: true, force: true })));

function tempFolder(): string {
  const folder = mkdtempSync(join(tmpdir(), 'os-audit-chain-'));
  folders.push(folder);
  return folder;
}

/** Six events per session, one of them with a number written `1e2`. */
function sixEvents(): string[] {
  return [0, 1, 2, 3, 4, 5].map((turn) => (turn === 1 ? `{"kind":"page_in","turn":1,"entry_count":2,"cost":1e2}` : `{"kind":"page_in","turn":${turn},"entry_count":2}`));
}

async function appendTexts(sessionId: string, texts: readonly string[]): Promise<void> {
  await new EventStore(testDb.db).appendEncoded(sessionId, encoded(texts));
}

function encoded(texts: readonly string[]) {
  return texts.map((text) => encodeEventText(text, {}));
}

/** Each stored event's hash, and the one the docs' definition gives from its stored text. */
async function storedAndRecomputed(sessionId: string): Promise<{ stored: string[]; recomputed: string[]; head: string }> {
  const { rows } = await sql<{ seq: string; text: string; hash: Buffer }>`
    SELECT seq, coalesce(payload_text, payload::text) AS text, hash FROM session_events WHERE session_id = ${sessionId} ORDER BY seq`.execute(testDb.db);
  let previous = chainStart(sessionId);
  const recomputed = rows.map((row) => (previous = eventHash(previous, Number(row.seq), row.text)).toString('hex'));
  const { rows: heads } = await sql<{ head_hash: Buffer | null }>`SELECT head_hash FROM sessions WHERE session_id = ${sessionId}`.execute(testDb.db);
  return { stored: rows.map((row) => row.hash.toString('hex')), recomputed, head: heads[0]?.head_hash?.toString('hex') ?? 'no head' };
}

describe('the hash chain of each session', () => {
  it('is the one docs/integrity.md defines, on every write path: at the head, at an expected seq, many sessions, COPY, import', async () => {
    const store = new EventStore(testDb.db);
    await store.appendEncoded('paths-head', encoded(['{"kind":"page_in","turn":1,"entry_count":2}', '{"kind":"x","note":"a\\u0000b"}']));
    await store.appendEncoded('paths-head', encoded(['{"kind":"y","turn":3,"é":"\\ud83d\\ude00"}']));
    await store.append('paths-expected', [{ kind: 'page_in', turn: 1, entry_count: 2 }], { expectedSeq: -1 });
    await store.append('paths-expected', [{ kind: 'page_in', turn: 2, entry_count: 2 }], { expectedSeq: 0 });
    const rows = emptyRows();
    pushRow(rows, 'paths-many-a', 0, encodeEventText('{"kind":"page_in","turn":1,"entry_count":1}', {}));
    pushRow(rows, 'paths-many-b', 0, encodeEventText('{"kind":"page_in","turn":1,"entry_count":1}', {}));
    pushRow(rows, 'paths-many-b', 1, encodeEventText('{"kind":"page_out","turn":1,"entry_count":1}', {}));
    await store.appendSequenced(rows);
    const folder = tempFolder();
    writeFileSync(join(folder, 'paths-import.jsonl'), sixEvents().map((text, seq) => `{"seq":${seq},"event":${text}}\n`).join(''));
    expect(await importLogs(store, folder)).toMatchObject({ newEvents: 6, failures: [] });
    for (const sessionId of ['paths-head', 'paths-expected', 'paths-many-a', 'paths-many-b', 'paths-import']) {
      const { stored, recomputed, head } = await storedAndRecomputed(sessionId);
      expect(stored.length, sessionId).toBeGreaterThan(0);
      expect(stored, sessionId).toEqual(recomputed);
      expect(head, sessionId).toBe(recomputed.at(-1));
    }
    expect((await verifyEventChain(testDb.db, { sessions: ['paths-head', 'paths-import'] })).problems).toEqual([]);
  });

  it('cannot be chosen, nor can a row disagree with its event: turn, payload_text', async () => {
    await appendTexts('own-hash', ['{"kind":"page_in","turn":1}']);
    const insert = (columns: string, values: string) =>
      testDb.db.transaction().execute(async (trx) => {
        await sql`UPDATE sessions SET last_seq = 1 WHERE session_id = 'own-hash'`.execute(trx);
        await sql.raw(`INSERT INTO session_events (session_id, seq, ${columns}) VALUES ('own-hash', 1, ${values})`).execute(trx);
      });
    await expect(insert('kind, turn, payload', `'page_in', 999, '{"kind":"page_in","turn":1}'`)).rejects.toMatchObject({
      code: '23514',
      message: 'session "own-hash": seq 1: column turn (999) is not the event\'s turn (1)',
    });
    await expect(insert('kind, payload, payload_text', `'x', '{"kind":"x"}', 'not json at all'`)).rejects.toThrow(/session "own-hash": seq 1: column payload_text is not JSON/);
    await expect(insert('kind, payload, payload_text', `'x', '{"kind":"x","a":{"os_audit_unstorable_string":"\ufffd"}}', '{"kind":"x","a":"\\u0000","b":1}'`)).rejects.toThrow(
      'session "own-hash": seq 1: column payload_text is not the event that payload stands in for',
    );
    await expect(insert('kind, payload, payload_text', `'x', '{"kind":"x"}', '{"kind":"y"}'`)).rejects.toThrow(/column payload_text holds no string PostgreSQL cannot read/);
    await insert('kind, payload, hash', `'page_in', '{"kind":"page_in","turn":2}', '\\x00'`);
    const { stored, recomputed, head } = await storedAndRecomputed('own-hash');
    expect(stored).toEqual(recomputed);
    expect(head).toBe(recomputed[1]);
    const { rows } = await sql<{ turn: string }>`SELECT turn FROM session_events WHERE session_id = 'own-hash' AND seq = 1`.execute(testDb.db);
    expect(Number(rows[0]!.turn)).toBe(2);
    await expect(sql`UPDATE sessions SET head_hash = '\\x00' WHERE session_id = 'own-hash'`.execute(testDb.db)).rejects.toThrow(/column head_hash is not the hash of its last stored event/);
  });

  it('reads the turn the encoder reads, however it is written', async () => {
    const written = ['0', '1', '4294967295', '4294967296', '12345678901', '-1', '-0', '1.0', '1e2', '"1"', 'true', 'null', '[1]', '{"turn":1}', ' 7 '];
    const texts = [...written.map((turn) => `{"kind":"x","turn":${turn}}`), '{"kind":"x"}'];
    const { rows } = await sql<{ turn: string | null }>`
      SELECT os_audit_turn_as_written(text::json)::text AS turn FROM unnest(${texts}::text[]) WITH ORDINALITY AS t(text, n) ORDER BY n`.execute(testDb.db);
    expect(rows.map((row) => (row.turn === null ? null : Number(row.turn)))).toEqual(texts.map((text) => encodeEventText(text, {}).turn));
  });

  it('names the rows stored before the chain that disagree with their event, once migrated', async () => {
    const scratch = await createTestDatabase({ migrate: false });
    try {
      await migrateTo(scratch.db, '0016-sealed-history');
      await scratch.db.transaction().execute(async (trx) => {
        await sql`INSERT INTO sessions (session_id, last_seq) VALUES ('old-turn', 1), ('old-fine', 0)`.execute(trx);
        await sql`INSERT INTO session_events (session_id, seq, kind, turn, payload) VALUES
                    ('old-turn', 0, 'page_in', 1, '{"kind":"page_in","turn":1}'),
                    ('old-turn', 1, 'page_in', 999, '{"kind":"page_in","turn":2}'),
                    ('old-fine', 0, 'page_in', 1, '{"kind":"page_in","turn":1}')`.execute(trx);
      });
      await migrateToLatest(scratch.db);
      expect((await verifyEventChain(scratch.db)).problems).toEqual([
        { sessionId: 'old-turn', seq: 1, problem: "column turn (999) is not the event's turn (2)" },
      ]);
    } finally {
      await scratch.drop();
    }
  });

  it('shows every change made past the triggers, at the session and its first seq affected; a digest shows the rest', async () => {
    const sessions = ['body', 'key-order', 'number-text', 'middle-gone', 'tail-gone', 'swapped', 'dropped', 'untouched'];
    for (const sessionId of sessions) await appendTexts(sessionId, sixEvents());
    const digest = makeDigest(await readDigestBody(testDb.db, { previous: null }));
    await pastTheTriggers(testDb.db, async (trx) => {
      await sql`UPDATE session_events SET payload = '{"kind":"page_in","turn":2,"entry_count":3}' WHERE session_id = 'body' AND seq = 2`.execute(trx);
      await sql`UPDATE session_events SET payload = '{"turn":3,"kind":"page_in","entry_count":2}' WHERE session_id = 'key-order' AND seq = 3`.execute(trx);
      await sql`UPDATE session_events SET payload = '{"kind":"page_in","turn":1,"entry_count":2,"cost":100}' WHERE session_id = 'number-text' AND seq = 1`.execute(trx);
      await sql`DELETE FROM session_events WHERE session_id = 'middle-gone' AND seq = 2`.execute(trx);
      await sql`DELETE FROM session_events WHERE session_id = 'tail-gone' AND seq >= 4`.execute(trx);
      await sql`UPDATE sessions SET last_seq = 3, head_hash = (SELECT hash FROM session_events WHERE session_id = 'tail-gone' AND seq = 3) WHERE session_id = 'tail-gone'`.execute(trx);
      await sql`UPDATE session_events SET seq = 100 WHERE session_id = 'swapped' AND seq = 1`.execute(trx);
      await sql`UPDATE session_events SET seq = 1 WHERE session_id = 'swapped' AND seq = 2`.execute(trx);
      await sql`UPDATE session_events SET seq = 2 WHERE session_id = 'swapped' AND seq = 100`.execute(trx);
      await sql`DELETE FROM session_events WHERE session_id = 'dropped'`.execute(trx);
      await sql`DELETE FROM sessions WHERE session_id = 'dropped'`.execute(trx);
      // Into the past, chained as the database would have: by a transaction older than the digest.
      await sql`INSERT INTO sessions (session_id, last_seq, head_hash) VALUES ('backdated', 0, os_audit_event_hash(os_audit_chain_start('backdated'), 0, '{"kind":"page_in"}'))`.execute(trx);
      await sql`INSERT INTO session_events (session_id, seq, kind, payload, transaction_id, hash)
                VALUES ('backdated', 0, 'page_in', '{"kind":"page_in"}', '3', os_audit_event_hash(os_audit_chain_start('backdated'), 0, '{"kind":"page_in"}'))`.execute(trx);
    });
    const chain = await verifyEventChain(testDb.db, { sessions: [...sessions, 'backdated'] });
    expect(chain.problems.map(({ sessionId, seq }) => [sessionId, seq])).toEqual([
      ['body', 2],
      ['key-order', 3],
      ['middle-gone', 2],
      ['number-text', 1],
      ['swapped', 1],
    ]);
    const againstDigest = await verifyLogAgainstDigest(testDb.db, digest);
    expect(againstDigest.map(({ sessionId, seq }) => [sessionId, seq])).toEqual([
      ['backdated', 0],
      ['body', 2],
      ['dropped', 0],
      ['key-order', 3],
      ['middle-gone', 2],
      ['number-text', 1],
      ['swapped', 1],
      ['tail-gone', 4],
    ]);
    expect(againstDigest.find((problem) => problem.sessionId === 'tail-gone')?.problem).toMatch(/ends at seq 3, but the digest covers it up to seq 5/);
    // The same through the CLI, as an auditor runs it: every session named, exit 1.
    const file = join(tempFolder(), 'digest.json');
    writeFileSync(file, digestText(digest));
    const cli = await runCliInProcess(['verify', '--digest', file], { env: { DATABASE_URL: testDb.url } });
    expect(cli.code).toBe(1);
    for (const problem of againstDigest) expect(cli.stdout).toContain(`  session ${JSON.stringify(problem.sessionId)}: seq ${problem.seq}: ${problem.problem}\n`);
    expect(cli.stdout).not.toContain('"untouched"');
    expect(againstDigest.find((problem) => problem.sessionId === 'backdated')?.problem).toMatch(/inserted into the past/);
  });

  it('shows a rewrite with every later hash recomputed, against a digest', async () => {
    await appendTexts('rehashed', sixEvents());
    const digest = makeDigest(await readDigestBody(testDb.db, { previous: null }));
    await pastTheTriggers(testDb.db, async (trx) => {
      await sql`UPDATE session_events SET payload = '{"kind":"page_in","turn":4,"entry_count":9}' WHERE session_id = 'rehashed' AND seq = 4`.execute(trx);
      const { rows } = await sql<{ seq: string; text: string; hash: Buffer }>`
        SELECT seq, payload::text AS text, hash FROM session_events WHERE session_id = 'rehashed' ORDER BY seq`.execute(trx);
      let previous = rows[3]!.hash;
      for (const row of rows.slice(4)) {
        previous = eventHash(previous, Number(row.seq), row.text);
        await sql`UPDATE session_events SET hash = ${previous} WHERE session_id = 'rehashed' AND seq = ${row.seq}`.execute(trx);
      }
      await sql`UPDATE sessions SET head_hash = ${previous} WHERE session_id = 'rehashed'`.execute(trx);
    });
    expect((await verifyEventChain(testDb.db, { sessions: ['rehashed'] })).problems).toEqual([]);
    expect((await verifyLogAgainstDigest(testDb.db, digest)).filter((problem) => problem.sessionId === 'rehashed')).toEqual([
      { sessionId: 'rehashed', seq: 5, problem: 'its hash at seq 5 is not the one the digest holds: the log up to it was rewritten, hashes included' },
    ]);
  });
});

describe('os-audit digest and verify --digest', () => {
  // A log of its own: the tests above leave theirs changed.
  const cliDb = useTestDatabase();

  it('sign, chain and check digests; name a missing or edited one and what changed in the log', async () => {
    const folder = tempFolder();
    const env = { DATABASE_URL: cliDb.url };
    const key = join(folder, 'signing-key');
    expect(await runCliInProcess(['digest', '--new-key', key], { env })).toMatchObject({ code: 0 });
    await new EventStore(cliDb.db).appendEncoded('cli-a', encoded(sixEvents()));
    const digests = join(folder, 'digests');
    const first = await runCliInProcess(['digest', '--dir', digests, '--key', key], { env });
    expect(first.stderr).toBe('');
    expect(first).toMatchObject({ code: 0, stdout: expect.stringMatching(/^wrote .*digest-.*\.json: 1 session, 6 events, root [0-9a-f]{64}, signed\n$/) });
    await new EventStore(cliDb.db).appendEncoded('cli-b', encoded(sixEvents()));
    expect(await runCliInProcess(['digest', '--dir', digests, '--key', key], { env })).toMatchObject({ code: 0 });
    await new EventStore(cliDb.db).appendEncoded('cli-c', encoded(sixEvents()));
    expect(await runCliInProcess(['digest', '--dir', digests, '--key', key], { env })).toMatchObject({ code: 0 });

    const clean = await runCliInProcess(['verify', '--digest', digests, '--public-key', `${key}.pub`], { env });
    expect(clean).toMatchObject({ code: 0, stdout: expect.stringContaining('verified 3 digests: 0 with problems') });
    expect(clean.stdout.match(/signature valid/g)).toHaveLength(3);

    // Another key does not verify them.
    const otherKey = join(folder, 'other.pub');
    writeFileSync(otherKey, generateKeyPairSync('ed25519').publicKey.export({ format: 'pem', type: 'spki' }).toString());
    const wrongKey = await runCliInProcess(['verify', '--digest', digests, '--public-key', otherKey], { env });
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stdout.match(/signature invalid/g)).toHaveLength(3);

    await pastTheTriggers(cliDb.db, async (trx) => {
      await sql`UPDATE session_events SET payload = '{"kind":"page_in","turn":2,"entry_count":7}' WHERE session_id = 'cli-a' AND seq = 2`.execute(trx);
    });
    const [oldest, middle, newest] = readdirSync(digests).sort();
    const edited = JSON.parse(readFileSync(join(digests, newest!), 'utf8').split('\n')[0]!) as { sessions: number };
    edited.sessions += 1;
    writeFileSync(join(digests, newest!), `${JSON.stringify(edited)}\n${readFileSync(join(digests, newest!), 'utf8').split('\n')[1]}\n`);
    rmSync(join(digests, middle!));
    const broken = await runCliInProcess(['verify', '--digest', digests, '--public-key', `${key}.pub`], { env });
    expect(broken.code).toBe(1);
    expect(broken.stdout).toContain(`digest ${join(digests, oldest!)}`);
    expect(broken.stdout).toContain('  session "cli-a": seq 2: its hash is not that of its stored text');
    expect(broken.stdout).toContain(`  it does not follow ${join(digests, oldest!)}: a digest between them is missing, or one of them was edited`);
    expect(broken.stdout).toContain('its signature is not valid for the public key given');

    const all = await runCliInProcess(['verify', '--all'], { env });
    expect(all.code).toBe(1);
    expect(all.stdout).toContain('chain: session "cli-a": seq 2: its hash is not that of its stored text');
  });
});
