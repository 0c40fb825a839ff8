import { createHash } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { builtInProjections } from '../../projections/index.js';
import { backfillEventChain, type ChainBackfillProgress } from '../../src/store/backfill-event-chain.js';
import { migrateToLatest } from '../../src/migrate-to-latest.js';
import type { DB } from '../../src/db/schema.js';
import { EventStore } from '../../src/store/event-store.js';
import { columnarAvailable, readEventLogLayout, readSealedPartitions, sealEventLog } from '../../src/store/seal-event-log.js';
import { migrateTo } from '../support/migrate-to.js';
import { waitForHorizon } from '../support/projector-harness.js';
import { appendLeftOpen, partitions } from '../support/sealed-log.js';
import { onCitus, useTestDatabase } from '../support/test-database.js';

/**
 * The hash chain's backfill (src/store/backfill-event-chain.ts) over events stored before
 * migration 0017, on a plain store and on one sealed before it, whose sealed events sit in
 * citus_columnar partitions that take no UPDATE.
 */
const testDb = useTestDatabase({ migrate: false, perTest: true });

const pageIn = (turn: number, note = '') => ({ kind: 'page_in', turn, entry_count: 1, note });

function sha256(...parts: Buffer[]): Buffer {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest();
}

/** Each event's hash recomputed from its session's texts as `os-audit events` reads them, and the hash the store holds. */
async function chains(db: Kysely<DB>) {
  const { rows: sessions } = await sql<{ session_id: string; head_hash: Buffer | null }>`SELECT session_id, head_hash FROM sessions ORDER BY session_id`.execute(db);
  const store = new EventStore(db);
  const result = [];
  for (const { session_id: sessionId, head_hash: headHash } of sessions) {
    const { rows: stored } = await sql<{ seq: string; hash: Buffer | null }>`SELECT seq::text, hash FROM session_events WHERE session_id = ${sessionId} ORDER BY seq`.execute(db);
    let previous = sha256(Buffer.from(sessionId, 'utf8'));
    const expected: string[] = [];
    for await (const { seq, text } of store.readSessionText(sessionId)) {
      const seqBytes = Buffer.alloc(8);
      seqBytes.writeBigInt64BE(BigInt(seq));
      previous = sha256(previous, seqBytes, Buffer.from(text, 'utf8'));
      expected.push(previous.toString('hex'));
    }
    result.push({ sessionId, expected, stored: stored.map((row) => row.hash?.toString('hex') ?? null), headHash: headHash?.toString('hex') ?? null });
  }
  return result;
}

async function expectChained(db: Kysely<DB>, sessions: number): Promise<void> {
  const all = await chains(db);
  expect(all).toHaveLength(sessions);
  for (const { sessionId, expected, stored, headHash } of all) {
    expect(stored, sessionId).toEqual(expected);
    expect(headHash, sessionId).toBe(expected.at(-1));
  }
  const { rows } = await sql<{ completed: boolean }>`SELECT completed_at IS NOT NULL AS completed FROM event_chain_backfill`.execute(db);
  expect(rows).toEqual([{ completed: true }]);
}

/**
 * What a fold of every projection would leave for a seal to take: their checkpoints past every
 * committed event (at 0016 the projections of today cannot fold).
 */
async function foldedByHand(db: Kysely<DB>): Promise<void> {
  await waitForHorizon(db);
  await sql`UPDATE projection_checkpoints SET transaction_id = pg_current_xact_id()`.execute(db);
}

/** How many events without a hash the heap partition holds, and each sealed one, oldest first. */
async function unchainedByPartition(db: Kysely<DB>): Promise<{ heap: number; sealed: number[] }> {
  const unchained = async (table: string) =>
    (await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(table)} WHERE hash IS NULL`.execute(db)).rows[0]!.n;
  const sealed = [];
  for (const partition of await readSealedPartitions(db)) sealed.push(await unchained(partition.table));
  return { heap: await unchained((await readEventLogLayout(db)).hot!.table), sealed };
}

async function tablesNamed(pattern: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`SELECT relname::text AS name FROM pg_class WHERE relname LIKE ${pattern}`.execute(testDb.db);
  return rows.map((row) => row.name);
}

/**
 * A store at 0016 with two sealed partitions (a's first 3 events and b's; then a's fourth and
 * c's) and a heap (a's fifth, d's two).
 */
async function sealedAt0016(db: Kysely<DB>): Promise<EventStore> {
  await migrateTo(db, '0016-sealed-history');
  const store = new EventStore(db);
  await store.append('a', [pageIn(1), pageIn(2, 'x'.repeat(5000)), { kind: 'page_in', turn: 3, entry_count: 1, note: 'nul \u0000 here' }]);
  await store.append('b', [pageIn(1)]);
  await foldedByHand(db);
  expect(await sealEventLog(db)).toMatchObject({ partitioned: true, sealedEvents: 4 });
  await store.append('a', [pageIn(4)]);
  await store.append('c', [pageIn(1)]);
  await foldedByHand(db);
  expect(await sealEventLog(db)).toMatchObject({ sealedEvents: 2 });
  await store.append('a', [pageIn(5)]);
  await store.append('d', [pageIn(1), pageIn(2)]);
  expect((await partitions(db)).map((partition) => partition.method)).toEqual(['heap', 'columnar', 'columnar']);
  return store;
}

describe.skipIf(onCitus)('chaining events stored before the hash chain', () => {
  it('chains a plain store migrated from 0016', async () => {
    await migrateTo(testDb.db, '0016-sealed-history');
    const store = new EventStore(testDb.db);
    await store.append('a', [pageIn(1), pageIn(2, 'x'.repeat(5000)), { kind: 'page_in', turn: 3, entry_count: 1, note: 'nul \u0000 here' }]);
    await store.append('b', [pageIn(1)]);
    await store.append('é', [pageIn(1), pageIn(2)]);
    await migrateToLatest(testDb.db);
    await expectChained(testDb.db, 3);
    expect(await store.append('a', [pageIn(4)])).toEqual([3]);
    await expectChained(testDb.db, 3);
  });

  it('chains a store sealed before 0017: each sealed partition is rewritten with its hashes, the heap updated', async (context) => {
    if (!(await columnarAvailable(testDb.db))) context.skip();
    const store = await sealedAt0016(testDb.db);
    const sealed = await partitions(testDb.db);
    const progress: ChainBackfillProgress[] = [];
    await migrateToLatest(testDb.db, builtInProjections, { onChainProgress: (p) => progress.push(p) });
    await expectChained(testDb.db, 4);
    // Each sealed partition was swapped for one of the same name, bounds and kind; nothing is left over.
    expect(await partitions(testDb.db)).toEqual(sealed);
    expect(await tablesNamed('session_events_chaining%')).toEqual([]);
    // One report per sealed partition (4 then 2 events), then one per batch of sessions (3 events in the heap).
    expect(progress).toEqual([
      { chainedEvents: 4, totalEvents: 9, chainedSessions: 0 },
      { chainedEvents: 6, totalEvents: 9, chainedSessions: 0 },
      { chainedEvents: 9, totalEvents: 9, chainedSessions: 4 },
    ]);
    // The chain's look-ups of events read sealed ones by index, as the log's checks do.
    const { rows: settings } = await sql<{ name: string; by_index: boolean }>`
      SELECT proname::text AS name, 'columnar.enable_custom_scan=off' = ANY(proconfig) AS by_index FROM pg_proc
      WHERE proname IN ('os_audit_chain_event', 'os_audit_check_session_head', 'os_audit_check_head_hash', 'os_audit_check_appended_events', 'os_audit_refuse_sealed_duplicates')`.execute(
      testDb.db,
    );
    expect(settings.filter((row) => !row.by_index)).toEqual([]);
    expect(settings).toHaveLength(5);

    // Appends chain on from the heads, whether their last event is sealed (b) or not (a).
    expect(await store.append('a', [pageIn(6)])).toEqual([5]);
    expect(await store.append('b', [pageIn(2)])).toEqual([1]);
    await expectChained(testDb.db, 4);
    // A later seal keeps the hashes; history stays append-only.
    await foldedByHand(testDb.db);
    expect(await sealEventLog(testDb.db)).toMatchObject({ sealedEvents: 5 });
    await expectChained(testDb.db, 4);
    await expect(sql`UPDATE session_events SET kind = 'x' WHERE session_id = 'a'`.execute(testDb.db)).rejects.toThrow(/append-only/);
    await expect(sql`UPDATE session_events SET hash = NULL WHERE session_id = 'd'`.execute(testDb.db)).rejects.toThrow(/append-only/);
  });

  it('goes on after an interruption: each sealed partition is the old one or the new one, never half of one', async (context) => {
    if (!(await columnarAvailable(testDb.db))) context.skip();
    const store = await sealedAt0016(testDb.db);
    const sealed = await partitions(testDb.db);
    const interrupted = migrateToLatest(testDb.db, builtInProjections, {
      onChainProgress: () => {
        throw new Error('interrupted after the first batch');
      },
    });
    await expect(interrupted).rejects.toThrow(/run migrate again to go on.*interrupted after the first batch/);
    expect(await unchainedByPartition(testDb.db)).toEqual({ heap: 3, sealed: [0, 2] });

    // A writer's transaction open past the swap's lock timeout: the partition stays as it was.
    const open = await appendLeftOpen(store, 'open', [pageIn(1)]);
    await expect(backfillEventChain(testDb.db, { lockTimeoutMs: 200 })).rejects.toThrow(
      /did not end within 200 ms to swap in a sealed partition with its hashes: it was left as it was/,
    );
    await open.commit();
    expect(await partitions(testDb.db)).toEqual(sealed);
    expect(await tablesNamed('session_events_chaining%')).toEqual([]);
    expect(await unchainedByPartition(testDb.db)).toEqual({ heap: 3, sealed: [0, 2] });

    const progress: ChainBackfillProgress[] = [];
    expect(await migrateToLatest(testDb.db, builtInProjections, { onChainProgress: (p) => progress.push(p) })).toEqual([]);
    expect(progress.at(-1)).toEqual({ chainedEvents: 5, totalEvents: 9, chainedSessions: 4 });
    await expectChained(testDb.db, 5);
    expect(await partitions(testDb.db)).toEqual(sealed);
  });
});
