import { SEALED_EVENTS_BY_INDEX } from '../stored-log/sealed-events.js';
import { type Kysely, sql } from 'kysely';
import { storeIsDistributed } from '../db/distributed-store.js';
import { exactInteger } from '../db/exact-integer.js';
import type { DB } from '../db/schema.js';
import { copyRangeSql, type EventLogLayout, eventLogLayoutSql, rowStoreFactsSql, sealableEndSql, sealedPartitionsSql, unsealedCountSql } from './sql/seal-sql.js';

/**
 * What {@link sealEventLog} did.
 *
 * @example
 * ```ts
 * const report = await sealEventLog(db);
 * console.log(`sealed ${report.sealedEvents} events, of the transactions before ${report.range?.to}`);
 * ```
 */
export interface SealReport {
  /** This seal made `session_events` a partitioned table (the first seal of a store does). */
  partitioned: boolean;
  /** Events moved into the new columnar partition; 0 when there was nothing to seal. */
  sealedEvents: number;
  /** The transactions sealed, `[from, to)` (`from` null: from the first); undefined when nothing was sealed. */
  range: { from: string | null; to: string } | undefined;
  /** The new sealed partition, when one was made. */
  sealedTable: string | undefined;
}

/** How {@link sealEventLog} waits for the log's writers. */
export interface SealOptions {
  /** How long the swap waits for the writers' transactions to end before it gives up; default 10 s. */
  lockTimeoutMs?: number;
  /**
   * The most events the swap may move while writers and readers wait for it, default 100,000.
   * It moves the events of the transactions from the end of the sealed range on. That is the
   * last one every projection has folded (it stays unsealed) or one still running, and every
   * later one. With more, the seal seals nothing and says so.
   */
  maxMovedEvents?: number;
}

/**
 * Moves the history every registered projection has folded into a compressed `citus_columnar`
 * partition (about a fifth of the row store's size), in one short swap. Readers of
 * `session_events` read on as before; sealed events are never changed.
 * Why: docs/design/sealed-history.md
 *
 * Needs the `citus_columnar` extension (it comes with Citus) and a role that may create it and
 * change the tables, as for `migrate`; not on a store distributed by Citus. When the swap would
 * move more than `maxMovedEvents` events, or the writers' transactions do not end within
 * `lockTimeoutMs`, nothing is swapped and the seal fails, to be run again.
 *
 * @example
 * ```ts
 * const db = openDatabase({ connectionString: process.env.DATABASE_URL! });
 * const { sealedEvents } = await sealEventLog(db);
 * ```
 */
export async function sealEventLog(db: Kysely<DB>, options: SealOptions = {}): Promise<SealReport> {
  if (await storeIsDistributed(db)) throw new Error('sealing is not available on a store distributed by Citus: its session_events stays a row store');
  // One connection for the whole seal, which holds the lock that keeps a second seal out.
  return db.connection().execute(async (connection) => {
    const { rows } = await sql<{ locked: boolean }>`SELECT pg_try_advisory_lock(${SEAL_LOCK_KEY}) AS locked`.execute(connection);
    if (!rows[0]!.locked) {
      throw new Error('another os-audit seal, or os-audit migrate chaining the events stored before the hash chain, is running on this database: run this one once it has ended');
    }
    try {
      return await sealHeldLock(connection, options);
    } finally {
      await sql`SELECT pg_advisory_unlock(${SEAL_LOCK_KEY})`.execute(connection);
    }
  });
}

/**
 * The log's functions that look one session's events up by index: the contiguity check (0015),
 * the check of sealed seqs (0016), and the hash chain's trigger and head checks (0017). A
 * migration that defines one of them again must keep {@link SEALED_EVENTS_BY_INDEX} on it.
 */
const EVENT_LOOKUPS = [
  'os_audit_check_appended_events()',
  'os_audit_refuse_sealed_duplicates()',
  'os_audit_chain_event()',
  'os_audit_check_session_head()',
  'os_audit_check_head_hash()',
];

/** The advisory lock a seal holds (an arbitrary key of its own: "os-audit seal"). */
const SEAL_LOCK_KEY = 0x05a1_5ea1;

/** What a seal whose swap waited too long for the writers says. */
const SEAL_GAVE_UP = '(--lock-timeout): nothing was sealed; run the seal again';

/** How long a swap waits for the writers' transactions to end, unless told otherwise. */
export const DEFAULT_SWAP_LOCK_TIMEOUT_MS = 10_000;

/**
 * Keeps seals out until the transaction `trx` ends, waiting for a running one: for a writer of
 * history other than the seal (the hash chain's backfill), whose changes a seal's copy, made
 * outside its swap's lock, would leave behind.
 */
export async function keepSealsOut(trx: Kysely<DB>): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(${SEAL_LOCK_KEY})`.execute(trx);
}

async function sealHeldLock(db: Kysely<DB>, options: SealOptions): Promise<SealReport> {
  const lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_SWAP_LOCK_TIMEOUT_MS;
  const maxMovedEvents = options.maxMovedEvents ?? 100_000;
  await ensureColumnar(db);
  // What a seal whose connection was lost left behind.
  const { rows: leftovers } = await sql<{ name: string }>`SELECT relname::text AS name FROM pg_class WHERE starts_with(relname::text, 'session_events_sealing_') AND relkind = 'r' AND relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = 'session_events'::regclass)`.execute(db);
  for (const { name } of leftovers) await sql`DROP TABLE ${sql.table(name)}`.execute(db);
  let layout = await readEventLogLayout(db);
  const to = (await sealableEndSql().execute(db)).rows[0]!.end;
  if (layout.hot?.from != null && BigInt(to) <= BigInt(layout.hot.from)) return { partitioned: false, sealedEvents: 0, range: undefined, sealedTable: undefined };
  // Asked first: neither the first seal's partitioning nor the copy is done for a swap that would be refused.
  await checkMovable(db, layout.hot?.table ?? 'session_events', to, maxMovedEvents);
  const partitioned = !layout.partitioned;
  if (partitioned) layout = await partitionEventLog(db, lockTimeoutMs);
  const hot = layout.hot!;
  const sealing = `session_events_sealing_${Date.now()}`;
  await createSealedTable(db, sealing);
  try {
    // No event can be added to these transactions any more: one copy, outside the lock.
    const copied = Number((await copyRangeSql(hot.table, sealing, hot.from, to).execute(db)).numAffectedRows ?? 0n);
    if (copied === 0) {
      await sql`DROP TABLE ${sql.table(sealing)}`.execute(db);
      return { partitioned, sealedEvents: 0, range: undefined, sealedTable: undefined };
    }
    const sealedTable = `session_events_sealed_${hot.from ?? 'start'}_${to}`;
    await indexSealedTable(db, sealing, sealedTable, hot.from, to);
    await swap(db, { hot: hot.table, from: hot.from, sealing, sealedTable, to }, lockTimeoutMs, maxMovedEvents);
    await sql`ANALYZE ${sql.table(sealedTable)}`.execute(db);
    return { partitioned, sealedEvents: copied, range: { from: hot.from, to }, sealedTable };
  } catch (error) {
    await sql`DROP TABLE IF EXISTS ${sql.table(sealing)}`.execute(db).catch(() => {});
    throw error;
  }
}

/**
 * Creates `name`, an empty columnar table with the log's columns and owner, to be filled and
 * attached as a sealed partition; and sets the log's look-ups of events to read sealed ones by
 * index. Set here rather than in a migration: citus_columnar has just been loaded into the
 * session by the CREATE. A role other than a superuser may set its setting on a function only
 * then, and a migration's session may not have loaded it. So a store partitioned before
 * migration 0017 defined the chain's functions gets the setting on them from the backfill that
 * rewrites its sealed partitions, or from its next seal.
 */
export async function createSealedTable(db: Kysely<DB>, name: string): Promise<void> {
  await sql`CREATE TABLE ${sql.table(name)} (LIKE session_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS) USING columnar`.execute(db);
  await ownedAsTheLog(db, name);
  for (const lookup of EVENT_LOOKUPS) {
    // An older schema may lack some of them.
    const { rows } = await sql<{ exists: boolean }>`SELECT to_regprocedure(${lookup}) IS NOT NULL AS exists`.execute(db);
    if (rows[0]!.exists) await sql.raw(`ALTER FUNCTION ${lookup} SET ${SEALED_EVENTS_BY_INDEX}`).execute(db);
  }
}

/**
 * Builds the indexes of a sealed partition on `table`, named after `name` (the partition it
 * will be), and its bounds `[from, to)` as a constraint, so that attaching it does not scan it.
 */
export async function indexSealedTable(db: Kysely<DB>, table: string, name: string, from: string | null, to: string): Promise<void> {
  await sql`CREATE UNIQUE INDEX ${sql.id(`${name}_session_seq_key`)} ON ${sql.table(table)} (session_id, seq)`.execute(db);
  await sql`CREATE UNIQUE INDEX ${sql.id(`${name}_position_key`)} ON ${sql.table(table)} (position)`.execute(db);
  await sql`CREATE INDEX ${sql.id(`${name}_transaction_position_idx`)} ON ${sql.table(table)} (transaction_id, position)`.execute(db);
  await sql`ALTER TABLE ${sql.table(table)} ADD CONSTRAINT ${sql.id(`${name}_bounds`)} CHECK (${rangeCheck(from, to)})`.execute(db);
}

/** Attaches `table`, indexed by {@link indexSealedTable}, as the sealed partition of the transactions `[from, to)`. */
export async function attachSealedTable(trx: Kysely<DB>, table: string, from: string | null, to: string): Promise<void> {
  await sql`ALTER TABLE session_events ATTACH PARTITION ${sql.table(table)} FOR VALUES FROM (${from === null ? sql`MINVALUE` : sql.lit(from)}) TO (${sql.lit(to)})`.execute(trx);
}

/**
 * How `session_events` is stored now.
 *
 * @example
 * ```ts
 * if ((await readEventLogLayout(db)).partitioned) console.log('sealed history');
 * ```
 */
export async function readEventLogLayout(db: Kysely<DB>): Promise<EventLogLayout> {
  const row = (await eventLogLayoutSql().execute(db)).rows[0]!;
  if (row.kind !== 'p') return { partitioned: false, hot: undefined };
  if (row.hot_table === null) throw new Error('session_events is partitioned but has no partition for new transactions (FOR VALUES FROM (…) TO (MAXVALUE))');
  const from = /^FOR VALUES FROM \((?:'?(\d+)'?|MINVALUE)\) TO \(MAXVALUE\)$/.exec(row.hot_bound ?? '');
  if (from === null) throw new Error(`session_events: its open partition ${row.hot_table} has bounds ${row.hot_bound} this os-audit cannot read`);
  return { partitioned: true, hot: { table: row.hot_table, from: from[1] ?? null } };
}

/** A sealed partition of `session_events`: the events of the transactions `[from, to)` (`from` null: from the first). */
export interface SealedPartition {
  table: string;
  from: string | null;
  to: string;
}

/**
 * The sealed partitions of `session_events`, oldest first; none when it is not partitioned.
 *
 * @example
 * ```ts
 * for (const { table, to } of await readSealedPartitions(db)) console.log(`${table}: transactions before ${to}`);
 * ```
 */
export async function readSealedPartitions(db: Kysely<DB>): Promise<SealedPartition[]> {
  const partitions = (await sealedPartitionsSql().execute(db)).rows.map(({ name, bound }) => {
    const range = /^FOR VALUES FROM \((?:'?(\d+)'?|MINVALUE)\) TO \('?(\d+)'?\)$/.exec(bound);
    if (range === null) throw new Error(`session_events: its sealed partition ${name} has bounds ${bound} this os-audit cannot read`);
    return { table: name, from: range[1] ?? null, to: range[2]! };
  });
  return partitions.sort((a, b) => (BigInt(a.to) < BigInt(b.to) ? -1 : 1));
}

/**
 * Whether the server can seal: it has the `citus_columnar` extension (it comes with Citus).
 *
 * @example
 * ```ts
 * if (await columnarAvailable(db)) await sealEventLog(db);
 * ```
 */
export async function columnarAvailable(db: Kysely<DB>): Promise<boolean> {
  const { rows } = await sql<{ available: boolean }>`SELECT EXISTS (SELECT FROM pg_available_extensions WHERE name = 'citus_columnar') AS available`.execute(db);
  return rows[0]!.available;
}

async function ensureColumnar(db: Kysely<DB>): Promise<void> {
  if (!(await columnarAvailable(db))) {
    throw new Error('sealing needs the citus_columnar extension on the PostgreSQL server (it comes with Citus), and this server has none: the log stays a row store');
  }
  await sql`CREATE EXTENSION IF NOT EXISTS citus_columnar`.execute(db);
}

/**
 * Makes `session_events` a table partitioned by range of `transaction_id`, in one transaction.
 * Its only partition is the row store as it is (`FROM (MINVALUE) TO (MAXVALUE)`: no row is
 * checked or moved). The parent takes over the table's name, identity, constraints, indexes,
 * triggers, privileges and the views that read it.
 */
async function partitionEventLog(db: Kysely<DB>, lockTimeoutMs: number): Promise<EventLogLayout> {
  return db.transaction().execute(async (trx) => {
    await lockEventLog(trx, lockTimeoutMs, SEAL_GAVE_UP);
    const facts = (await rowStoreFactsSql().execute(trx)).rows[0]!;
    const rowStore = 'session_events_heap_start';
    const run = (statement: string) => sql.raw(statement).execute(trx);
    for (const trigger of facts.triggers) await sql`DROP TRIGGER ${sql.id(trigger.name)} ON session_events`.execute(trx);
    await run(`ALTER TABLE session_events RENAME TO ${rowStore}`);
    // Index names are the schema's: the parent's take the old ones. The row store keeps its
    // primary key on position, which cannot be the parent's: it lacks the partition key.
    await run(`ALTER INDEX session_events_pkey RENAME TO ${rowStore}_pkey`);
    await run(`ALTER INDEX session_events_transaction_position_idx RENAME TO ${rowStore}_transaction_position_idx`);
    await run(`ALTER INDEX session_events_recorded_at_brin RENAME TO ${rowStore}_recorded_at_brin`);
    await run(`ALTER TABLE ${rowStore} RENAME CONSTRAINT session_events_session_seq_key TO ${rowStore}_session_seq_key`);
    await run(`ALTER TABLE ${rowStore} ALTER COLUMN position DROP IDENTITY`);
    await run(`CREATE TABLE session_events (LIKE ${rowStore} INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (transaction_id)`);
    await run(`ALTER TABLE session_events OWNER TO ${facts.owner}`);
    await run(`ALTER TABLE session_events ALTER COLUMN position ADD GENERATED ALWAYS AS IDENTITY (START WITH ${exactInteger(facts.next_position)})`);
    // The row store's own (transaction_id, position) index becomes this one's partition: nothing is built.
    await run(`CREATE INDEX session_events_transaction_position_idx ON session_events (transaction_id, position)`);
    await run(`ALTER TABLE session_events ATTACH PARTITION ${rowStore} FOR VALUES FROM (MINVALUE) TO (MAXVALUE)`);
    for (const trigger of facts.triggers) {
      // Read before the rename, the definition names session_events: the parent now.
      await run(trigger.definition);
      if (trigger.always) await sql`ALTER TABLE session_events ENABLE ALWAYS TRIGGER ${sql.id(trigger.name)}`.execute(trx);
    }
    await run(
      `CREATE TRIGGER session_events_sealed_unique AFTER INSERT ON session_events REFERENCING NEW TABLE AS appended FOR EACH STATEMENT EXECUTE FUNCTION os_audit_refuse_sealed_duplicates()`,
    );
    for (const grant of facts.grants) await run(grant);
    // A partition now: written only through session_events, whose statement checks (contiguity,
    // heads) an INSERT into the partition itself would pass by.
    for (const grantee of new Set(facts.grants.map((grant) => / TO (.+)$/.exec(grant)![1]!))) await run(`REVOKE ALL ON ${rowStore} FROM ${grantee}`);
    for (const view of facts.views) {
      const { rows } = await sql<{ definition: string }>`SELECT pg_get_viewdef(${view}::regclass) AS definition`.execute(trx);
      await run(`CREATE OR REPLACE VIEW ${view} AS ${rows[0]!.definition.replaceAll(rowStore, 'session_events')}`);
    }
    return { partitioned: true, hot: { table: rowStore, from: null } };
  });
}

/**
 * The swap, in one transaction under an exclusive lock of `session_events` (writers wait). The
 * events of the transactions after the sealed range move to a new heap partition: those the
 * projections have not all folded, and those still running when the lock was asked for
 * (committed now). The sealed table takes the range's place.
 */
async function swap(
  db: Kysely<DB>,
  step: { hot: string; from: string | null; sealing: string; sealedTable: string; to: string },
  lockTimeoutMs: number,
  maxMovedEvents: number,
): Promise<void> {
  const { hot, from, sealing, sealedTable, to } = step;
  const newHot = `session_events_heap_${to}`;
  await db.transaction().execute(async (trx) => {
    await lockEventLog(trx, lockTimeoutMs, SEAL_GAVE_UP);
    // Writers may have appended since the first count: the lock is held only for a bounded move.
    await checkMovable(trx, hot, to, maxMovedEvents);
    await sql`CREATE TABLE ${sql.table(newHot)} (LIKE session_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`.execute(trx);
    await ownedAsTheLog(trx, newHot);
    await sql`INSERT INTO ${sql.table(newHot)} SELECT * FROM ${sql.table(hot)} WHERE transaction_id >= ${to}::xid8 ORDER BY position`.execute(trx);
    await sql`ALTER TABLE ${sql.table(newHot)} ADD CONSTRAINT ${sql.id(`${newHot}_position_key`)} UNIQUE (position)`.execute(trx);
    await sql`ALTER TABLE ${sql.table(newHot)} ADD CONSTRAINT ${sql.id(`${newHot}_session_seq_key`)} UNIQUE (session_id, seq)`.execute(trx);
    await sql`CREATE INDEX ${sql.id(`${newHot}_recorded_at_brin`)} ON ${sql.table(newHot)} USING brin (recorded_at)`.execute(trx);
    await sql`ALTER TABLE ${sql.table(newHot)} ADD CONSTRAINT ${sql.id(`${newHot}_bounds`)} CHECK (transaction_id >= ${sql.lit(to)}::xid8)`.execute(trx);
    await sql`ALTER TABLE session_events DETACH PARTITION ${sql.table(hot)}`.execute(trx);
    await sql`ALTER TABLE ${sql.table(sealing)} RENAME TO ${sql.id(sealedTable)}`.execute(trx);
    await attachSealedTable(trx, sealedTable, from, to);
    await sql`ALTER TABLE session_events ATTACH PARTITION ${sql.id(newHot)} FOR VALUES FROM (${sql.lit(to)}) TO (MAXVALUE)`.execute(trx);
    await sql`DROP TABLE ${sql.table(hot)}`.execute(trx);
  });
}

/** Throws, before anything is swapped, when the swap would move more than `maxMovedEvents` events. */
async function checkMovable(db: Kysely<DB>, hot: string, to: string, maxMovedEvents: number): Promise<void> {
  const { count } = (await unsealedCountSql(hot, to, maxMovedEvents + 1).execute(db)).rows[0]!;
  if (count <= maxMovedEvents) return;
  throw new Error(
    `the swap would move more than ${maxMovedEvents} events (--max-moved) while writers and readers wait: those of the transactions from ${to} on ` +
      '(the last one every projection has folded, which a seal leaves unsealed until a later one is folded, or one still running, and every later one); nothing was sealed. ' +
      'Let the projector catch up (os-audit status shows how far behind each projection is), or raise --max-moved',
  );
}

/** Gives a new partition the log's owner, who may then change it as the rest of the log (a seal run by a superuser, say). */
async function ownedAsTheLog(db: Kysely<DB>, table: string): Promise<void> {
  const { rows } = await sql<{ owner: string }>`SELECT relowner::regrole::text AS owner FROM pg_class WHERE oid = 'session_events'::regclass`.execute(db);
  await sql`ALTER TABLE ${sql.id(table)} OWNER TO ${sql.raw(rows[0]!.owner)}`.execute(db);
}

/**
 * Takes `session_events` for this transaction alone, waiting at most `lockTimeoutMs` for the
 * writers' transactions to end; when they do not, the error goes on with `whatNow`: what was
 * left and what to do.
 */
export async function lockEventLog(trx: Kysely<DB>, lockTimeoutMs: number, whatNow: string): Promise<void> {
  await sql`SELECT set_config('lock_timeout', ${`${lockTimeoutMs}ms`}, true)`.execute(trx);
  try {
    await sql`LOCK TABLE session_events IN ACCESS EXCLUSIVE MODE`.execute(trx);
  } catch (error) {
    if ((error as { code?: unknown }).code !== '55P03') throw error;
    throw new Error(`the writers' transactions did not end within ${lockTimeoutMs} ms ${whatNow}`, { cause: error });
  }
}

function rangeCheck(from: string | null, to: string) {
  return from === null ? sql`transaction_id < ${sql.lit(to)}::xid8` : sql`transaction_id >= ${sql.lit(from)}::xid8 AND transaction_id < ${sql.lit(to)}::xid8`;
}
