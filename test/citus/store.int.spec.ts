import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { type Kysely, sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { builtInProjections } from '../../projections/index.js';
import { PostgresSessionLog } from '../../src/session-log/postgres-session-log.js';
import { openDatabase, poolOf } from '../../src/db/open-database.js';
import { importStream } from '../../src/import/import-logs.js';
import { EventStore } from '../../src/store/event-store.js';
import { citusTestsRun, useCitusDatabase } from '../support/citus-database.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';

const folder = mkdtempSync(path.join(tmpdir(), 'os-audit-citus-store-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** The worker port each of `sessionIds` lives on. */
async function workerPortsOf(db: Kysely<any>, sessionIds: readonly string[]): Promise<Set<number>> {
  const { rows } = await sql<{ nodeport: number }>`
    SELECT DISTINCT s.nodeport FROM unnest(${sessionIds}::text[]) AS i(session_id)
    JOIN citus_shards AS s ON s.shardid = get_shard_id_for_distribution_column('session_events', i.session_id)`.execute(db);
  return new Set(rows.map((row) => row.nodeport));
}

/** A stream of `sessions` sessions of three events each, in import-stream lines, interleaved. */
function streamLines(prefix: string, sessions: number): string[] {
  const lines: string[] = [];
  for (let seq = 0; seq < 3; seq++) {
    for (let s = 0; s < sessions; s++) {
      lines.push(JSON.stringify({ session_id: `${prefix}-${s}`, seq, event: { kind: 'tool_gated', turn: seq, tool: `tool-${s}` } }));
    }
  }
  return lines;
}

describe.runIf(citusTestsRun)('the event store on Citus', () => {
  const testDb = useCitusDatabase();

  it('is distributed by session_id by migrate: the store, the bookkeeping and every projection, colocated', async () => {
    const { rows } = await sql<{ table_name: string; distribution_column: string; colocation_id: number }>`
      SELECT table_name::text, distribution_column, colocation_id FROM citus_tables ORDER BY 1`.execute(testDb.db);
    const expected = [
      'sessions',
      'session_events',
      'projection_blocked_sessions',
      'projection_errors',
      'projection_work',
      ...builtInProjections.flatMap((projection) => [...projection.tables, `projection_batch_${projection.name}`]),
    ];
    expect(rows.map((row) => row.table_name).sort()).toEqual([...expected].sort());
    expect(new Set(rows.map((row) => row.distribution_column))).toEqual(new Set(['session_id']));
    expect(new Set(rows.map((row) => row.colocation_id)).size).toBe(1);
    // A second migrate changes nothing.
    expect((await runCliInProcess(['migrate'], { env: { DATABASE_URL: testDb.url } })).stdout).toContain('nothing to apply');
  });

  it('keeps history append-only and every log gap-free on every shard, whoever writes', async () => {
    const store = new EventStore(testDb.db);
    const sessionIds = Array.from({ length: 12 }, (_, i) => `guarded-${i}`);
    for (const sessionId of sessionIds) await store.append(sessionId, [{ kind: 'page_in', turn: 1 }, { kind: 'page_out', turn: 1 }]);
    expect((await workerPortsOf(testDb.db, sessionIds)).size).toBe(2);

    const refused = async (statement: string) => {
      const error = await sql.raw(statement).execute(testDb.db).then(
        () => undefined,
        (caught: { code?: string; message: string }) => caught,
      );
      return error;
    };
    for (const statement of [
      `UPDATE session_events SET kind = 'x'`,
      `DELETE FROM session_events WHERE session_id = 'guarded-1'`,
      'TRUNCATE session_events',
      'TRUNCATE sessions CASCADE',
      `DELETE FROM sessions WHERE session_id = 'guarded-2'`,
      `UPDATE sessions SET last_seq = 0 WHERE session_id = 'guarded-3'`,
    ]) {
      const error = await refused(statement);
      expect(error, statement).toBeDefined();
      expect(error!.code, statement).toBe('42501');
    }
    // A hole in a session's log, and a head past its events: refused by the checks on the shard.
    const hole = await refused(`
      BEGIN;
      UPDATE sessions SET last_seq = 3 WHERE session_id = 'guarded-4';
      INSERT INTO session_events (session_id, seq, kind, payload) VALUES ('guarded-4', 3, 'page_in', '{"kind":"page_in"}');
      COMMIT`);
    expect(hole?.message).toContain('session "guarded-4": seq 3 would leave a hole in its log: seq 2 is not stored');
    await sql`ROLLBACK`.execute(testDb.db).catch(() => {});
    const head = await refused(`UPDATE sessions SET last_seq = 5 WHERE session_id = 'guarded-5'`);
    expect(head?.message).toContain('session "guarded-5": its head is at seq 5 but its log ends at seq 1');

    const { rows } = await sql<{ events: number }>`SELECT count(*)::int AS events FROM session_events WHERE session_id LIKE 'guarded-%'`.execute(testDb.db);
    expect(rows[0]!.events).toBe(24);
  });

  it('imports a stream of sessions on both workers all or nothing, and reads each log back as written', async () => {
    const lines = streamLines('stream', 40);
    const sessionIds = Array.from({ length: 40 }, (_, s) => `stream-${s}`);
    expect((await workerPortsOf(testDb.db, sessionIds)).size).toBe(2);

    const broken = path.join(folder, 'broken.jsonl');
    writeFileSync(broken, `${[...lines, '{"session_id":"stream-0","seq":3,"event":{"kind":']. join('\n')}\n`);
    const refused = await runCliInProcess(['import', broken], { env: { DATABASE_URL: testDb.url } });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`${broken}:121`);
    const { rows: none } = await sql<{ events: number }>`SELECT count(*)::int AS events FROM session_events WHERE session_id LIKE 'stream-%'`.execute(testDb.db);
    expect(none[0]!.events).toBe(0);

    const stream = path.join(folder, 'stream.jsonl');
    writeFileSync(stream, `${lines.join('\n')}\n`);
    const imported = await runCliInProcess(['import', stream], { env: { DATABASE_URL: testDb.url } });
    expect(imported.stdout).toContain('imported 120 new events; 0 were already stored');
    const again = await runCliInProcess(['import', stream], { env: { DATABASE_URL: testDb.url } });
    expect(again.stdout).toContain('imported 0 new events; 120 were already stored');

    const printed = await runCliInProcess(['events', 'stream-7'], { env: { DATABASE_URL: testDb.url } });
    expect(printed.stdout).toBe(
      lines
        .filter((line) => JSON.parse(line).session_id === 'stream-7')
        .map((line) => {
          const { seq, event } = JSON.parse(line);
          return `${JSON.stringify({ seq, event })}\n`;
        })
        .join(''),
    );
  });

  it('commits an append to one session on its worker alone, in one phase; an import over both workers in two', async () => {
    // What the coordinator sends the workers, as NOTICEs on this connection alone.
    const remote: string[] = [];
    const db = openDatabase({ connectionString: testDb.url, maxConnections: 1 });
    poolOf(db)!.on('connect', (client) => {
      client.on('notice', (notice) => remote.push(`${notice.message} ${notice.detail ?? ''}`));
      void client.query('SET citus.log_remote_commands = on');
    });
    try {
      const store = new EventStore(db);
      await store.append('one-phase', [{ kind: 'page_in', turn: 1 }]);
      await store.append('one-phase', [{ kind: 'page_out', turn: 1 }, { kind: 'page_in', turn: 2 }], { expectedSeq: 0 });
      const [worker] = await workerPortsOf(db, ['one-phase']);
      expect(remote.length).toBeGreaterThan(0);
      expect(remote.filter((command) => !command.includes(`:${worker} `))).toEqual([]);
      expect(remote.filter((command) => /PREPARE TRANSACTION|COMMIT PREPARED/.test(command))).toEqual([]);

      remote.length = 0;
      const report = await importStream(store, Readable.from([Buffer.from(`${streamLines('two-phase', 20).join('\n')}\n`)]), 'two-phase.jsonl');
      expect(report).toMatchObject({ newEvents: 60, failures: [] });
      expect(remote.some((command) => command.includes('PREPARE TRANSACTION'))).toBe(true);
      expect(remote.some((command) => command.includes('COMMIT PREPARED'))).toBe(true);
    } finally {
      await db.destroy();
    }
  });

  it('imports a folder of many session files four at a time, without a deadlock between the imports', async () => {
    const directory = path.join(folder, 'many-files');
    mkdirSync(directory);
    for (let s = 0; s < 104; s++) {
      const lines = Array.from({ length: 1000 }, (_, seq) => JSON.stringify({ seq, event: { kind: 'tool_gated', turn: seq, tool: `tool-${seq % 7}`, note: 'x'.repeat(300) } }));
      writeFileSync(path.join(directory, `files-${String(s).padStart(4, '0')}.jsonl`), `${lines.join('\n')}\n`);
    }
    const imported = await runCliInProcess(['import', directory], { env: { DATABASE_URL: testDb.url } });
    expect(imported.stderr).toBe('');
    expect(imported.stdout).toContain('imported 104000 new events; 0 were already stored (104 sessions from 104 files)');
  });

  it("serves the runtime's SessionLog: appends in order, reads back, the latest seq", async () => {
    const log = new PostgresSessionLog(testDb.db);
    const seqs = await Promise.all(Array.from({ length: 20 }, (_, i) => log.append('runtime-1', { kind: 'page_in', turn: i } as never)));
    expect(seqs).toEqual(Array.from({ length: 20 }, (_, i) => i));
    const entries = await log.read('runtime-1', 5);
    expect(entries.map((entry) => entry.seq)).toEqual(Array.from({ length: 15 }, (_, i) => i + 5));
    expect(await log.latestSeq('runtime-1')).toBe(19);
  });
});
