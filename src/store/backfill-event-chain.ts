import { type Kysely, sql } from 'kysely';
import { chainSealedPartitions } from './chain-sealed-partitions.js';
import { DEFAULT_SWAP_LOCK_TIMEOUT_MS, keepSealsOut, readEventLogLayout } from './seal-event-log.js';
import { SEALED_EVENTS_BY_INDEX } from '../stored-log/sealed-events.js';
import { isStoreDistributed } from '../db/distributed-store.js';
import { exactInteger } from '../db/exact-integer.js';
import type { DB } from '../db/schema.js';

/** Where a backfill of the hash chain stands, after each batch. */
export interface ChainBackfillProgress {
  /** Events chained by this run so far. */
  chainedEvents: number;
  /** Events this run found to chain (sessions appended to meanwhile may add some). */
  totalEvents: number;
  /** Sessions chained by this run so far. */
  chainedSessions: number;
}

export interface ChainBackfillOptions {
  /** About how many events each batch (one transaction) chains; a session is never split. */
  batchEvents?: number;
  /** How long the swap of a sealed partition waits for the writers' transactions to end; default 10 s. */
  lockTimeoutMs?: number;
  onProgress?: (progress: ChainBackfillProgress) => void;
}

/**
 * Gives every event stored before migration 0017 its place in its session's hash chain, and
 * each such session its head hash. On a sealed store, the sealed partitions first: each one
 * that holds such events is rewritten whole, with its hashes, and swapped in (see
 * `chainSealedPartitions`). Then each batch of whole sessions is a transaction of its own that
 * holds those sessions' heads: appends to them wait for it, others go on. Both keep seals out
 * while they write. Interrupted, a later run starts where this one stopped; once nothing is
 * left, the store records it and later runs cost one query.
 *
 * @example
 * ```ts
 * await backfillEventChain(db, { onProgress: (p) => console.error(`${p.chainedEvents}/${p.totalEvents}`) });
 * ```
 */
export async function backfillEventChain(db: Kysely<DB>, options: ChainBackfillOptions = {}): Promise<ChainBackfillProgress> {
  const progress: ChainBackfillProgress = { chainedEvents: 0, totalEvents: 0, chainedSessions: 0 };
  const state = await db.selectFrom('event_chain_backfill').select('completed_at').executeTakeFirst();
  if (state?.completed_at != null) return progress;
  const batchEvents = options.batchEvents ?? 50_000;
  const { rows } = await sql<{ events: string }>`SELECT coalesce(sum(last_seq + 1), 0) AS events FROM sessions WHERE head_hash IS NULL`.execute(db);
  progress.totalEvents = exactInteger(rows[0]!.events);
  const distributed = await isStoreDistributed(db);
  // A store distributed by Citus is never sealed.
  if (!distributed) {
    await chainSealedPartitions(db, options.lockTimeoutMs ?? DEFAULT_SWAP_LOCK_TIMEOUT_MS, (events) => {
      progress.chainedEvents += events;
      options.onProgress?.({ ...progress });
    });
  }
  let after: string | null = null;
  for (;;) {
    const batch = await nextBatch(db, after, batchEvents);
    if (batch.length === 0) break;
    const ids = batch.map((session) => session.session_id);
    const chained = await db.transaction().execute((trx) => chainSessions(trx, ids, distributed));
    after = ids[ids.length - 1]!;
    progress.chainedEvents += chained;
    progress.chainedSessions += ids.length;
    options.onProgress?.({ ...progress });
  }
  // Asked apart from the UPDATE: Citus cannot plan a local table's UPDATE over a distributed one.
  const { rows: left } = await sql<{ unchained: boolean }>`SELECT EXISTS (SELECT 1 FROM sessions WHERE head_hash IS NULL LIMIT 1) AS unchained`.execute(db);
  if (!left[0]!.unchained) await sql`UPDATE event_chain_backfill SET completed_at = now()`.execute(db);
  return progress;
}

/** The next sessions to chain after `after`, whole, about `batchEvents` events in all (at least one session). */
async function nextBatch(db: Kysely<DB>, after: string | null, batchEvents: number): Promise<{ session_id: string; last_seq: number }[]> {
  const candidates = await db
    .selectFrom('sessions')
    .select(['session_id', 'last_seq'])
    .where('head_hash', 'is', null)
    .$if(after !== null, (query) => query.where('session_id', '>', after!))
    .orderBy('session_id')
    .limit(1000)
    .execute();
  const batch: { session_id: string; last_seq: number }[] = [];
  let events = 0;
  for (const session of candidates) {
    const count = exactInteger(session.last_seq) + 1;
    if (batch.length > 0 && events + count > batchEvents) break;
    batch.push({ session_id: session.session_id, last_seq: exactInteger(session.last_seq) });
    events += count;
  }
  return batch;
}

/**
 * Chains the unchained events of these sessions, in one transaction that holds their heads
 * first. The hashes are computed by the database (`os_audit_unchained_hashes`); each event
 * takes the one UPDATE history allows, its missing hash. Sealed events have theirs already
 * (`chainSealedPartitions`): the UPDATE leaves out the sealed partitions, which take none.
 */
async function chainSessions(trx: Kysely<DB>, ids: string[], distributed: boolean): Promise<number> {
  if (!distributed) {
    // A seal's copy, made outside its lock, would leave these hashes behind.
    await keepSealsOut(trx);
    // citus_columnar's own scan cannot be part of an UPDATE: the heads' below reads sealed events.
    await sql.raw(`SET LOCAL ${SEALED_EVENTS_BY_INDEX}`).execute(trx);
  }
  if (distributed) {
    // Citus locks rows only in a query that names one session.
    for (const id of ids) await sql`SELECT session_id FROM sessions WHERE session_id = ${id} AND head_hash IS NULL FOR UPDATE`.execute(trx);
  } else {
    await sql`SELECT session_id FROM sessions WHERE session_id = ANY(${ids}::text[]) AND head_hash IS NULL ORDER BY session_id FOR UPDATE`.execute(trx);
  }
  // On Citus the triggers that read it fire on the workers.
  if (distributed) await sql`SET LOCAL citus.propagate_set_commands = 'local'`.execute(trx);
  await sql`SET LOCAL os_audit.backfilling_chain = on`.execute(trx);
  const { rows } = await sql<{ session_id: string; seq: string; hash: Buffer }>`
    SELECT session_id, seq, hash FROM os_audit_unchained_hashes(${ids}::text[])`.execute(trx);
  // Only the heap partition: a columnar one fails an UPDATE's plan, even one that finds no row there.
  const heapFrom = distributed ? null : ((await readEventLogLayout(trx)).hot?.from ?? null);
  let updated = 0;
  // On Citus a list of rows joined in an UPDATE is planned on one shard only as VALUES naming one session (at most 10,000 rows each).
  const groups = distributed ? groupBySession(rows).flatMap((group) => chunks(group, 10_000)) : [rows];
  for (const group of groups) {
    const result = await sql`
      UPDATE session_events AS e SET hash = c.hash
      FROM ${distributed ? sql`(VALUES ${sql.join(group.map((row) => sql`(${row.session_id}::text, ${row.seq}::bigint, ${row.hash}::bytea)`))})` : sql`unnest(${group.map((row) => row.session_id)}::text[], ${group.map((row) => row.seq)}::bigint[], ${group.map((row) => row.hash)}::bytea[])`}
        AS c(session_id, seq, hash)
      WHERE e.session_id = c.session_id AND e.seq = c.seq${distributed ? sql` AND e.session_id = ${group[0]!.session_id}` : sql``}${
        heapFrom === null ? sql`` : sql` AND e.transaction_id >= ${sql.lit(heapFrom)}::xid8`
      }`.execute(trx);
    updated += Number(result.numAffectedRows ?? 0n);
  }
  if (updated < rows.length) {
    throw new Error(`${rows.length - updated} events of the sessions ${JSON.stringify(ids[0])} to ${JSON.stringify(ids.at(-1))} were sealed after the sealed partitions were chained (a seal ran meanwhile)`);
  }
  // Also for sessions whose events were all sealed, chained already.
  await sql`
    UPDATE sessions AS s SET head_hash = e.hash
    FROM session_events AS e
    WHERE s.session_id = ANY(${ids}::text[]) AND e.session_id = s.session_id AND e.seq = s.last_seq`.execute(trx);
  return rows.length;
}

function chunks<Row>(rows: Row[], size: number): Row[][] {
  return Array.from({ length: Math.ceil(rows.length / size) }, (_, i) => rows.slice(i * size, (i + 1) * size));
}

/** On Citus an UPDATE joined with a list reaches one shard only when it names one session. */
function groupBySession<Row extends { session_id: string }>(rows: Row[]): Row[][] {
  const groups = new Map<string, Row[]>();
  for (const row of rows) {
    let group = groups.get(row.session_id);
    if (group === undefined) groups.set(row.session_id, (group = []));
    group.push(row);
  }
  return [...groups.values()];
}
