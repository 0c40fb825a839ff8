import { type Kysely, sql } from 'kysely';
import { exactInteger } from '../db/exact-integer.js';
import type { DB } from '../db/schema.js';
import {
  attachSealedTable,
  createSealedTable,
  indexSealedTable,
  keepSealsOut,
  lockEventLog,
  readSealedPartitions,
  type SealedPartition,
} from './seal-event-log.js';
import { copyRangeSql } from './sql/seal-sql.js';

/**
 * Gives the events of the sealed partitions that have no hash yet (sealed before migration
 * 0017) their hashes. A columnar partition takes no UPDATE: each one holding such events is
 * copied, with every hash filled, into a new columnar table built as a seal builds one, which
 * takes its place. One transaction per partition, which keeps seals out: an interrupted run
 * leaves the old partition or the new one, and the next run goes on with those left. Writers and
 * readers wait only for the swap, at most `lockTimeoutMs` for the writers' transactions to end.
 * Heads are left to the caller: the events after them may be in the heap.
 *
 * `onChained` is called after each partition with the number of events it chained.
 */
export async function chainSealedPartitions(db: Kysely<DB>, lockTimeoutMs: number, onChained: (events: number) => void): Promise<void> {
  for (const partition of await readSealedPartitions(db)) {
    const chained = await db.transaction().execute((trx) => chainSealedPartition(trx, partition, lockTimeoutMs));
    if (chained === 0) continue;
    await sql`ANALYZE ${sql.table(partition.table)}`.execute(db);
    onChained(chained);
  }
}

async function chainSealedPartition(trx: Kysely<DB>, partition: SealedPartition, lockTimeoutMs: number): Promise<number> {
  const { table, from, to } = partition;
  await keepSealsOut(trx);
  const { rows } = await sql<{ events: string }>`SELECT count(*) AS events FROM ${sql.table(table)} WHERE hash IS NULL`.execute(trx);
  const unchained = exactInteger(rows[0]!.events);
  if (unchained === 0) return 0;
  // Over whole sessions, whose events before and after this partition's may be elsewhere.
  await sql`
    CREATE TEMP TABLE chained_hashes ON COMMIT DROP AS
    SELECT session_id, seq, hash FROM os_audit_unchained_hashes(ARRAY(SELECT DISTINCT session_id FROM ${sql.table(table)} WHERE hash IS NULL))`.execute(trx);
  await sql`ANALYZE chained_hashes`.execute(trx);
  const { rows: columns } = await sql<{ list: string }>`
    SELECT string_agg(CASE a.attname WHEN 'hash' THEN 'coalesce(e.hash, c.hash) AS hash' ELSE format('e.%I', a.attname) END, ', ' ORDER BY a.attnum) AS list
    FROM pg_attribute AS a WHERE a.attrelid = 'session_events'::regclass AND a.attnum > 0 AND NOT a.attisdropped`.execute(trx);
  // The partition's rows with their hashes, read by the seal's own copy.
  await sql`
    CREATE TEMP VIEW chained_events AS
    SELECT ${sql.raw(columns[0]!.list)} FROM ${sql.table(table)} AS e LEFT JOIN chained_hashes AS c ON c.session_id = e.session_id AND c.seq = e.seq`.execute(trx);
  // Under a name of its own: the partition's indexes hold their names until the swap drops it.
  const chaining = `session_events_chaining_${Date.now()}`;
  await createSealedTable(trx, chaining);
  await copyRangeSql('chained_events', chaining, from, to).execute(trx);
  await sql`DROP VIEW chained_events`.execute(trx);
  await indexSealedTable(trx, chaining, chaining, from, to);

  await lockEventLog(trx, lockTimeoutMs, 'to swap in a sealed partition with its hashes: it was left as it was; run os-audit migrate again');
  await sql`ALTER TABLE session_events DETACH PARTITION ${sql.table(table)}`.execute(trx);
  await sql`DROP TABLE ${sql.table(table)}`.execute(trx);
  await sql`ALTER TABLE ${sql.table(chaining)} RENAME TO ${sql.id(table)}`.execute(trx);
  // Its indexes and bounds, named after the table as it was built, now after the partition.
  const { rows: named } = await sql<{ name: string; is_index: boolean }>`
    SELECT c.relname::text AS name, true AS is_index FROM pg_index AS x JOIN pg_class AS c ON c.oid = x.indexrelid WHERE x.indrelid = ${table}::regclass AND starts_with(c.relname::text, ${chaining})
    UNION ALL
    SELECT conname::text, false FROM pg_constraint WHERE conrelid = ${table}::regclass AND starts_with(conname::text, ${chaining})`.execute(trx);
  for (const { name, is_index: isIndex } of named) {
    const renamed = `${table}${name.slice(chaining.length)}`;
    if (isIndex) await sql`ALTER INDEX ${sql.id(name)} RENAME TO ${sql.id(renamed)}`.execute(trx);
    else await sql`ALTER TABLE ${sql.table(table)} RENAME CONSTRAINT ${sql.id(name)} TO ${sql.id(renamed)}`.execute(trx);
  }
  await attachSealedTable(trx, table, from, to);
  return unchained;
}
