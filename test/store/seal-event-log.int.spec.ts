import { type Kysely, sql } from 'kysely';
import { describe, expect, inject, it } from 'vitest';
import { builtInProjections } from '../../projections/index.js';
import { osSnapshotProjection } from '../../projections/os-snapshot/os-snapshot-projection.js';
import { Projector } from '../../src/projector/projector.js';
import type { DB } from '../../src/db/schema.js';
import { EventStore } from '../../src/store/event-store.js';
import { makeDigest, readDigestBody } from '../../src/integrity/digest.js';
import { verifyLogAgainstDigest } from '../../src/integrity/verify-digest.js';
import { verifyEventChain } from '../../src/integrity/verify-event-chain.js';
import { rebuildProjection } from '../../src/projector/rebuild-projection.js';
import { columnarAvailable, readEventLogLayout, sealEventLog } from '../../src/store/seal-event-log.js';
import { compareWithFold, osSnapshotProjector, waitForHorizon } from '../support/projector-harness.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { sampleEvent } from '../support/sample-event.js';
import { appendLeftOpen, partitions } from '../support/sealed-log.js';
import { onCitus, useTestDatabase } from '../support/test-database.js';

/**
 * `os-audit seal` (src/store/seal-event-log.ts): committed history moved into citus_columnar
 * partitions under readers that see no change. citus_columnar comes with Citus, which .ci/run
 * installs into the server; the embedded PostgreSQL has none, and there the refusal is what is
 * proved. On a Citus cluster (the citus-suites project) sealing is refused.
 */
const testDb = useTestDatabase({ perTest: true });
const inCi = process.env.CI === 'true';
let columnarAnswer: boolean | undefined;

/** Whether the server has citus_columnar (asked in a test: each test has its own database). */
async function serverHasColumnar(): Promise<boolean> {
  if (columnarAnswer === undefined) {
    columnarAnswer = await columnarAvailable(testDb.db);
    if (!columnarAnswer && !onCitus) console.warn('test/store/seal-event-log: this server has no citus_columnar (it comes with Citus): only the refusal is tested');
  }
  return columnarAnswer;
}

const pageIn = (turn: number, note = '') => ({ kind: 'page_in', turn, entry_count: 1, note });

/** Every built-in projection folds what is committed: a seal takes only what all of them have folded. */
async function foldAll(db: Kysely<DB>): Promise<void> {
  await waitForHorizon(db);
  for (const projection of builtInProjections) await new Projector(db, projection, { pollIntervalMs: 50, leaseTtlMs: 2000 }).catchUp();
}

async function logs(db: Kysely<DB>) {
  const { rows } = await sql<{ session_id: string; seq: string; position: string; text: string; kind: string }>`
    SELECT session_id, seq::text, position::text, coalesce(payload_text, payload::text) AS text, kind FROM session_events ORDER BY position`.execute(db);
  return rows;
}

async function waitUntil(condition: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('waited too long');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe.runIf(onCitus)('sealing on Citus', () => {
  it('is refused: a distributed store stays a row store', async () => {
    await expect(sealEventLog(testDb.db)).rejects.toThrow(/not available on a store distributed by Citus/);
  });
});

describe.skipIf(onCitus)('sealing without citus_columnar', () => {
  it('is refused with what to install, and the log is left as it was', async (context) => {
    if (await serverHasColumnar()) context.skip();
    await new EventStore(testDb.db).append('s', [pageIn(1)]);
    await expect(sealEventLog(testDb.db)).rejects.toThrow(/needs the citus_columnar extension .* this server has none/);
    expect((await readEventLogLayout(testDb.db)).partitioned).toBe(false);
  });

  it('is available on the server CI tests (.ci/run installs Citus)', async (context) => {
    if (!inCi || inject('postgresSource') === 'embedded') context.skip();
    expect(await serverHasColumnar()).toBe(true);
  });
});

describe.skipIf(onCitus)('os-audit seal', () => {
  it('moves committed history into columnar partitions; every event reads back as it was written', async (context) => {
    if (!(await serverHasColumnar())) context.skip();
    const store = new EventStore(testDb.db);
    const large = 'x'.repeat(5000); // stored out of line (TOAST) in the row store
    await store.append('a', [pageIn(1), pageIn(2, large), { kind: 'page_in', turn: 3, entry_count: 1, note: 'nul \u0000 here' }]);
    await store.append('b', [pageIn(1), pageIn(2)]);
    await store.append('b', [pageIn(3)]);
    const before = await logs(testDb.db);
    expect(await sealEventLog(testDb.db)).toMatchObject({ partitioned: true, sealedEvents: 0, range: undefined });
    await foldAll(testDb.db);

    const first = await sealEventLog(testDb.db);
    // Every transaction before the projections' checkpoint: the first two appends, not the last.
    expect(first).toMatchObject({ partitioned: false, sealedEvents: 5, range: { from: null } });
    expect(await logs(testDb.db)).toEqual(before);
    const to = first.range!.to;
    expect(await partitions(testDb.db)).toEqual([
      { name: `session_events_heap_${to}`, bound: `FOR VALUES FROM ('${to}') TO (MAXVALUE)`, method: 'heap' },
      { name: `session_events_sealed_start_${to}`, bound: `FOR VALUES FROM (MINVALUE) TO ('${to}')`, method: 'columnar' },
    ]);

    await foldAll(testDb.db);
    expect(await sealEventLog(testDb.db)).toMatchObject({ partitioned: false, sealedEvents: 0, range: undefined });
    // The log's checks look sealed events up by index.
    const { rows: settings } = await sql<{ name: string; settings: string[] }>`
      SELECT proname::text AS name, proconfig AS settings FROM pg_proc WHERE proname IN ('os_audit_check_appended_events', 'os_audit_refuse_sealed_duplicates') ORDER BY 1`.execute(testDb.db);
    expect(settings.map((row) => [row.name, row.settings.includes('columnar.enable_custom_scan=off')])).toEqual([
      ['os_audit_check_appended_events', true],
      ['os_audit_refuse_sealed_duplicates', true],
    ]);
    expect(await store.append('a', [pageIn(4)])).toEqual([3]);
    expect(await store.append('c', [pageIn(1)])).toEqual([0]);
    await foldAll(testDb.db);
    const second = await sealEventLog(testDb.db);
    expect(second).toMatchObject({ partitioned: false, sealedEvents: 2, range: { from: to } });
    expect((await partitions(testDb.db)).map((partition) => partition.method)).toEqual(['heap', 'columnar', 'columnar']);
    const after = await logs(testDb.db);
    expect(after.slice(0, 6)).toEqual(before);
    expect(after.slice(6).map((row) => [row.session_id, row.seq, row.position])).toEqual([
      ['a', '3', '7'],
      ['c', '0', '8'],
    ]);
    const texts = [];
    for await (const stored of store.readSessionText('a')) texts.push(stored.text);
    expect(texts).toEqual(before.filter((row) => row.session_id === 'a').map((row) => row.text).concat(after[6]!.text));
    expect(texts[2]).toBe('{"kind":"page_in","turn":3,"entry_count":1,"note":"nul \\u0000 here"}');
  });

  it('keeps every seq once and history unchanged: a sealed seq, an update, a delete, a truncate are refused', async (context) => {
    if (!(await serverHasColumnar())) context.skip();
    await new EventStore(testDb.db).append('a', [pageIn(1), pageIn(2), pageIn(3)]);
    await new EventStore(testDb.db).append('z', [pageIn(1)]);
    await foldAll(testDb.db);
    expect(await sealEventLog(testDb.db)).toMatchObject({ sealedEvents: 3 });
    await expect(sql`INSERT INTO session_events (session_id, seq, kind, payload) VALUES ('a', 1, 'page_in', '{"kind":"page_in"}')`.execute(testDb.db)).rejects.toThrow(
      'session "a": seq 1 is already stored',
    );
    await expect(sql`UPDATE session_events SET kind = 'x' WHERE session_id = 'a'`.execute(testDb.db)).rejects.toThrow(/append-only/);
    await expect(sql`DELETE FROM session_events WHERE session_id = 'a'`.execute(testDb.db)).rejects.toThrow(/append-only/);
    await expect(sql`TRUNCATE session_events`.execute(testDb.db)).rejects.toThrow(/append-only/);
    // The log's other rules hold across partitions as before.
    await expect(sql`INSERT INTO session_events (session_id, seq, kind, payload) VALUES ('a', 5, 'page_in', '{"kind":"page_in"}')`.execute(testDb.db)).rejects.toThrow(
      /would leave a hole/,
    );
    expect(await new EventStore(testDb.db).append('a', [pageIn(4)])).toEqual([3]);
  });

  it("leaves no role a way into the row store's partition past session_events's checks", async (context) => {
    if (!(await serverHasColumnar())) context.skip();
    await new EventStore(testDb.db).append('a', [pageIn(1)]);
    // Nothing folded: the first seal makes the row store a partition and seals nothing.
    expect(await sealEventLog(testDb.db)).toMatchObject({ partitioned: true });
    const { rows } = await sql<{ name: string; grants: string | null }>`
      SELECT relname::text AS name, relacl::text AS grants FROM pg_class WHERE oid = 'session_events_heap_start'::regclass`.execute(testDb.db);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.grants ?? '').not.toMatch(/os_audit_(writer|reader|projector)/);
  });

  it('keeps the hash chain: a log nobody touched verifies clean after a seal and a rebuild; a sealed partition rewritten shows', async (context) => {
    if (!(await serverHasColumnar())) context.skip();
    const store = new EventStore(testDb.db);
    for (const sessionId of ['kept', 'forged']) await store.append(sessionId, [pageIn(1), pageIn(2), pageIn(3)]);
    // A seal leaves the last transaction folded in the row store.
    await store.append('after', [pageIn(1)]);
    await foldAll(testDb.db);
    expect(await sealEventLog(testDb.db)).toMatchObject({ sealedEvents: 6 });
    // Writers reach the partitions only through session_events and its checks.
    const { rows: reachable } = await sql<{ name: string }>`
      SELECT p.name FROM unnest(${(await partitions(testDb.db)).map((partition) => partition.name)}::text[]) AS p(name)
      WHERE has_table_privilege('os_audit_writer', p.name, 'INSERT') OR has_table_privilege('os_audit_writer', p.name, 'SELECT')`.execute(testDb.db);
    expect(reachable).toEqual([]);
    await store.append('kept', [pageIn(4)]);
    await rebuildProjection(testDb.db, osSnapshotProjection);
    expect(await verifyEventChain(testDb.db)).toMatchObject({ sessions: 3, events: 8, problems: [] });
    const digest = makeDigest(await readDigestBody(testDb.db, { previous: null }));

    // As a superuser would: the sealed partition copied with one event changed, and swapped in.
    const sealed = (await partitions(testDb.db)).find((partition) => partition.method === 'columnar')!;
    await testDb.db.transaction().execute(async (trx) => {
      await sql`CREATE TEMPORARY TABLE copied ON COMMIT DROP AS SELECT * FROM ${sql.table(sealed.name)}`.execute(trx);
      await sql`UPDATE copied SET payload = '{"kind":"page_in","turn":2,"entry_count":9,"note":""}' WHERE session_id = 'forged' AND seq = 1`.execute(trx);
      await sql`CREATE TABLE forged_partition (LIKE ${sql.table(sealed.name)} INCLUDING CONSTRAINTS) USING columnar`.execute(trx);
      await sql`INSERT INTO forged_partition SELECT * FROM copied`.execute(trx);
      await sql`ALTER TABLE session_events DETACH PARTITION ${sql.table(sealed.name)}`.execute(trx);
      await sql`ALTER TABLE session_events ATTACH PARTITION forged_partition ${sql.raw(sealed.bound)}`.execute(trx);
    });
    expect((await verifyEventChain(testDb.db)).problems).toEqual([
      { sessionId: 'forged', seq: 1, problem: 'its hash is not that of its stored text and the hash before it: the event was changed, moved or inserted' },
    ]);
    expect((await verifyLogAgainstDigest(testDb.db, digest)).map(({ sessionId, seq }) => [sessionId, seq])).toEqual([['forged', 1]]);
  });

  it("keeps the table's privileges, views and the projector's folds as they were", async (context) => {
    if (!(await serverHasColumnar())) context.skip();
    const store = new EventStore(testDb.db);
    for (const session of ['p1', 'p2', 'p3']) await store.append(session, Array.from({ length: 40 }, (_, seq) => sampleEvent(seq)));
    const privileges = () =>
      sql<{ grantee: string; column_name: string; privilege_type: string }>`
        SELECT grantee::text, column_name::text, privilege_type::text FROM information_schema.column_privileges
        WHERE table_name = 'session_events' ORDER BY 1, 2, 3`.execute(testDb.db);
    const activity = () => sql<{ n: string }>`SELECT count(*)::text AS n FROM os_event_activity`.execute(testDb.db);
    const granted = (await privileges()).rows;
    const seen = (await activity()).rows;
    await foldAll(testDb.db);
    const folded = await compareWithFold(testDb.db, ['p1', 'p2', 'p3']);

    expect(await sealEventLog(testDb.db)).toMatchObject({ sealedEvents: 80 });
    expect((await privileges()).rows).toEqual(granted);
    expect((await activity()).rows).toEqual(seen);
    // Folded again from the start, over the sealed log (as a rebuild does).
    await sql`TRUNCATE ${sql.join(osSnapshotProjection.tables.map((table) => sql.table(table)))}`.execute(testDb.db);
    await sql`UPDATE projection_checkpoints SET transaction_id = '0', position = 0, events_applied = 0 WHERE projection = ${osSnapshotProjection.name}`.execute(testDb.db);
    await osSnapshotProjector(testDb.db).catchUp();
    const refolded = await compareWithFold(testDb.db, ['p1', 'p2', 'p3']);
    expect(refolded).toEqual(folded);
    for (const { sql: stored, fold } of refolded) expect(stored).toEqual(fold);
  });

  it('loses nothing that writers append while it seals, nor what a transaction open across the seal commits', async (context) => {
    if (!(await serverHasColumnar())) context.skip();
    const store = new EventStore(testDb.db);
    const acknowledged = new Map<string, number>();
    // Partitioned already, so that the seal below waits for a lock only at its swap.
    await store.append('before', [pageIn(1)]);
    await foldAll(testDb.db);
    expect(await sealEventLog(testDb.db)).toMatchObject({ partitioned: true, sealedEvents: 0 });
    // Committed, then folded while `open` below stays open: what this seal takes.
    await store.append('mid', [pageIn(1)]);
    // A transaction that has stored its events and stays open until the swap waits for it:
    // no projector folds past it, so its events are after the sealed range, and move.
    const open = await appendLeftOpen(store, 'open', [pageIn(1), pageIn(2)]);

    const stop = new AbortController();
    const daemons = builtInProjections.map((projection) => new Projector(testDb.db, projection, { pollIntervalMs: 20, leaseTtlMs: 2000 }).run(stop.signal));
    let writing = true;
    const writers = Array.from({ length: 3 }, async (_, writer) => {
      let batch = 0;
      while (writing) {
        const session = `w${writer}-${batch % 4}`;
        const seqs = await store.append(session, [pageIn(batch), pageIn(batch)]);
        acknowledged.set(session, seqs.at(-1)!);
        batch++;
      }
    });
    await waitUntil(async () => {
      const { rows } = await sql<{ folded: boolean }>`
        SELECT bool_and((c.transaction_id, c.position) >= (e.transaction_id, e.position)) AS folded
        FROM projection_checkpoints AS c, (SELECT transaction_id, position FROM session_events WHERE session_id = 'mid') AS e`.execute(testDb.db);
      return rows[0]!.folded === true;
    });
    const sealed = sealEventLog(testDb.db, { lockTimeoutMs: 20_000 });
    try {
      await waitUntil(async () => {
        const { rows } = await sql<{ waiting: boolean }>`
          SELECT EXISTS (SELECT FROM pg_locks WHERE relation = 'session_events'::regclass AND mode = 'AccessExclusiveLock' AND NOT granted) AS waiting`.execute(testDb.db);
        return rows[0]!.waiting;
      });
    } finally {
      await open.commit();
    }
    const report = await sealed;
    expect(report.sealedEvents).toBeGreaterThanOrEqual(1);
    // Committed while the swap waited: moved into the heap partition it made.
    const { rows: moved } = await sql<{ n: string }>`SELECT count(*)::text AS n FROM ${sql.table(`session_events_heap_${report.range!.to}`)} WHERE session_id = 'open'`.execute(testDb.db);
    expect(moved).toEqual([{ n: '2' }]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const again = await sealEventLog(testDb.db, { lockTimeoutMs: 20_000 });
    writing = false;
    await Promise.all(writers);
    stop.abort();
    await Promise.all(daemons);
    expect(again.sealedEvents).toBeGreaterThan(0);
    const { rows: stored } = await sql<{ session_id: string; n: string; last: string; distinct_seqs: string }>`
      SELECT session_id, count(*)::text AS n, max(seq)::text AS last, count(DISTINCT seq)::text AS distinct_seqs
      FROM session_events GROUP BY session_id ORDER BY session_id`.execute(testDb.db);
    const bySession = new Map(stored.map((row) => [row.session_id, row]));
    expect(bySession.get('open')).toMatchObject({ n: '2', last: '1' });
    for (const [session, lastSeq] of acknowledged) {
      const row = bySession.get(session)!;
      expect(row, session).toMatchObject({ n: String(lastSeq + 1), last: String(lastSeq), distinct_seqs: String(lastSeq + 1) });
    }
  });

  it('gives up, changing nothing, when a writer keeps its transaction open past the lock timeout', async (context) => {
    if (!(await serverHasColumnar())) context.skip();
    const store = new EventStore(testDb.db);
    await store.append('a', [pageIn(1)]);
    const open = await appendLeftOpen(store, 'open', [pageIn(1)]);
    await expect(sealEventLog(testDb.db, { lockTimeoutMs: 200 })).rejects.toThrow(/did not end within 200 ms .* nothing was sealed/);
    expect((await readEventLogLayout(testDb.db)).partitioned).toBe(false);
    await open.commit();
    await foldAll(testDb.db);
    expect(await sealEventLog(testDb.db, { lockTimeoutMs: 200 })).toMatchObject({ partitioned: true, sealedEvents: 1 });
    await expect(sealEventLog(testDb.db, { lockTimeoutMs: 200 })).resolves.toMatchObject({ sealedEvents: 0 });
    const { rows } = await sql<{ name: string }>`SELECT relname::text AS name FROM pg_class WHERE relname LIKE 'session_events_sealing%'`.execute(testDb.db);
    expect(rows).toEqual([]);
  });

  it('seals nothing when the swap would move more than maxMovedEvents events, counted before the copy and again under the lock', async (context) => {
    if (!(await serverHasColumnar())) context.skip();
    const store = new EventStore(testDb.db);
    await store.append('a', [pageIn(1)]);
    await store.append('b', [pageIn(1)]);
    await foldAll(testDb.db);
    // Unfolded: the checkpoint's own transaction (b's) stays unsealed, so b's event and c's three would move.
    await store.append('c', [pageIn(1), pageIn(2), pageIn(3)]);
    const before = await logs(testDb.db);
    const refused = await runCliInProcess(['seal', '--database-url', testDb.url, '--max-moved', '3']);
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toMatch(/the swap would move more than 3 events \(--max-moved\) while writers and readers wait: .*nothing was sealed/);
    expect((await readEventLogLayout(testDb.db)).partitioned).toBe(false);
    expect(await sealEventLog(testDb.db, { maxMovedEvents: 4 })).toMatchObject({ partitioned: true, sealedEvents: 1 });

    // Appended while the seal copies: seen by the count under the lock, which the seal waits for.
    await foldAll(testDb.db);
    await store.append('d', [pageIn(1)]);
    await foldAll(testDb.db);
    const open = await appendLeftOpen(store, 'open', [pageIn(1), pageIn(2), pageIn(3)]);
    const layout = await partitions(testDb.db);
    const seal = sealEventLog(testDb.db, { maxMovedEvents: 2 });
    seal.catch(() => {});
    await waitUntil(async () => {
      const { rows } = await sql<{ waiting: boolean }>`
        SELECT EXISTS (SELECT FROM pg_locks WHERE relation = 'session_events'::regclass AND mode = 'AccessExclusiveLock' AND NOT granted) AS waiting`.execute(testDb.db);
      return rows[0]!.waiting;
    });
    await open.commit();
    await expect(seal).rejects.toThrow(/the swap would move more than 2 events/);
    expect(await partitions(testDb.db)).toEqual(layout);
    expect((await logs(testDb.db)).slice(0, before.length)).toEqual(before);
    expect((await logs(testDb.db)).map((row) => row.session_id)).toEqual(['a', 'b', 'c', 'c', 'c', 'd', 'open', 'open', 'open']);
    const { rows: leftovers } = await sql<{ name: string }>`SELECT relname::text AS name FROM pg_class WHERE relname LIKE 'session_events_sealing%'`.execute(testDb.db);
    expect(leftovers).toEqual([]);
  });

  it('is run by os-audit seal, which says what it did', async (context) => {
    if (!(await serverHasColumnar())) context.skip();
    await new EventStore(testDb.db).append('cli', [pageIn(1), pageIn(2)]);
    await new EventStore(testDb.db).append('cli', [pageIn(3)]);
    await foldAll(testDb.db);
    const first = await runCliInProcess(['seal', '--database-url', testDb.url]);
    expect(first).toMatchObject({ code: 0, stderr: '' });
    expect(first.stdout).toMatch(
      /^session_events is now partitioned by transaction \(its rows stayed where they were\)\nsealed 2 events \(their transactions: before transaction (\d+)\) into session_events_sealed_start_\1\n$/,
    );
    expect(await runCliInProcess(['seal', '--database-url', testDb.url])).toMatchObject({
      code: 0,
      stdout: 'nothing to seal: no event since the last seal that every projection has folded\n',
    });
  });
});
