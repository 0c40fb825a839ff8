import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import type { DB } from '../src/db/schema.js';
import { Prng } from './prng.js';
import { median, percentile, secondsSince } from './stats.js';

const SNAPSHOT_TABLES = ['os_snapshots', 'os_processes', 'os_signals', 'os_budget_exceeded'] as const;

/** The most sessions the query picks from: above it, a sample of the tables (so that millions of ids are not held). */
const QUERIED_SESSIONS_MAX = 200_000;

/** Bytes of the snapshot tables with their indexes and TOAST. */
export async function snapshotTablesSize(db: Kysely<DB>): Promise<number> {
  const { rows } = await sql<{ bytes: string }>`
    SELECT sum(pg_total_relation_size(t::regclass))::text AS bytes FROM unnest(${[...SNAPSHOT_TABLES]}::text[]) AS t`.execute(db);
  return Number(rows[0]!.bytes);
}

/** How {@link growSnapshotTables} makes its copies. */
export interface GrowOptions {
  /**
   * Copies keep at most this many rows of each list table (processes, signals, budget events)
   * of their original, the first by primary key: lighter sessions, for a number of them whose
   * whole shape would outgrow the machine's memory. All rows by default.
   */
  listRowsPerCopy?: number;
}

/**
 * Grows the snapshot tables to `target` sessions by copying the sessions there are under new
 * ids (`<id>~<sessions before>.<n>`, new at each growth), with their processes, signals and
 * budget events. The query reads only the snapshot tables, so this is a database of `target`
 * sessions of the corpus's shape (or lighter, see {@link GrowOptions}). It stores no
 * `target` × 200 events. Returns the sessions there were and there are.
 */
export async function growSnapshotTables(
  db: Kysely<DB>,
  target: number,
  options: GrowOptions = {},
): Promise<{ projected: number; total: number; seconds: number }> {
  const started = performance.now();
  const count = async () => (await sql<{ n: number }>`SELECT count(*)::int AS n FROM os_snapshots`.execute(db)).rows[0]!.n;
  const projected = await count();
  if (projected === 0) throw new Error('no snapshots to grow from');
  const needed = target - projected;
  if (needed > 0) {
    await db.transaction().execute(async (trx) => {
      await sql`
        CREATE TEMP TABLE bench_copies ON COMMIT DROP AS
        SELECT s.session_id AS original, s.session_id || '~' || ${projected}::int || '.' || r AS copy
        FROM generate_series(1, ${Math.ceil(needed / projected)}::int) AS r, os_snapshots AS s
        ORDER BY r, s.session_id
        LIMIT ${needed}`.execute(trx);
      await sql`CREATE INDEX ON bench_copies (original)`.execute(trx);
      // The indexes are kept up to date row by row, as the projector's inserts keep them. Made
      // again whole after the copy, they would be denser than a projection's ever are, and its
      // lookups faster (10M sessions: 9.8 GiB and p99 0.82 ms, against 11.7 GiB and 1.03 ms).
      for (const table of SNAPSHOT_TABLES) {
        const limit = table === 'os_snapshots' || options.listRowsPerCopy === undefined ? undefined : { perCopy: options.listRowsPerCopy, order: await primaryKeyOf(trx, table) };
        await copyRows(trx, table, limit);
      }
    });
  }
  for (const table of SNAPSHOT_TABLES) await sql`VACUUM ANALYZE ${sql.table(table)}`.execute(db);
  await sql`CHECKPOINT`.execute(db);
  return { projected, total: await count(), seconds: secondsSince(started) };
}

/** The rows of `table` of each original in `bench_copies` again under its copy's id; at most `limit.perCopy` of them per session, the first in `limit.order`. */
async function copyRows(trx: Kysely<DB>, table: string, limit: { perCopy: number; order: readonly string[] } | undefined): Promise<void> {
  const columns = await columnsOf(trx, table);
  const values = columns.map((column) => (column === 'session_id' ? sql`c.copy` : sql`t.${sql.ref(column)}`));
  const source =
    limit === undefined
      ? sql.table(table)
      : sql`(SELECT *, row_number() OVER (PARTITION BY session_id ORDER BY ${sql.join(limit.order.map((column) => sql.ref(column)))}) AS bench_rank
             FROM ${sql.table(table)})`;
  await sql`
    INSERT INTO ${sql.table(table)} (${sql.join(columns.map((column) => sql.ref(column)))})
    SELECT ${sql.join(values)}
    FROM bench_copies AS c JOIN ${source} AS t ON t.session_id = c.original
    ${limit === undefined ? sql`` : sql`WHERE t.bench_rank <= ${limit.perCopy}`}`.execute(trx);
}

async function columnsOf(db: Kysely<DB>, table: string): Promise<string[]> {
  const { rows } = await sql<{ column_name: string }>`
    SELECT column_name FROM information_schema.columns
    WHERE table_schema = current_schema() AND table_name = ${table} ORDER BY ordinal_position`.execute(db);
  return rows.map((row) => row.column_name);
}

async function primaryKeyOf(db: Kysely<DB>, table: string): Promise<string[]> {
  const { rows } = await sql<{ column: string }>`
    SELECT a.attname AS column
    FROM pg_index AS i JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
    WHERE i.indrelid = ${table}::regclass AND i.indisprimary
    ORDER BY array_position(i.indkey::int2[], a.attnum)`.execute(db);
  return rows.map((row) => row.column);
}

/** The sessions to query: every one, or a seeded sample of `max` of them (each about as likely). */
async function sessionIdsToQuery(db: Kysely<DB>, seed: string, max: number): Promise<{ total: number; ids: string[] }> {
  const total = (await sql<{ n: number }>`SELECT count(*)::int AS n FROM os_snapshots`.execute(db)).rows[0]!.n;
  const sample = total <= max ? sql`` : sql`TABLESAMPLE BERNOULLI (${(100 * max) / total}) REPEATABLE (${new Prng(`${seed}/sample`).int(0, 2 ** 31 - 1)})`;
  const { rows } = await sql<{ session_id: string }>`SELECT session_id FROM os_snapshots ${sample}`.execute(db);
  return { total, ids: rows.map((row) => row.session_id) };
}

/** The query among many lighter sessions (`--scaling`). */
export interface LargeQueryFigures extends QueryFigures {
  /** Rows each copy kept of each list table. */
  listRowsPerCopy: number;
}

export interface QueryFigures {
  sessions: number;
  /** The snapshot tables' size, indexes included. */
  tablesBytes: number;
  projectedSessions: number;
  queriesPerRun: number;
  runs: { p50Ms: number; p99Ms: number; maxMs: number }[];
  p50Ms: number;
  p99Ms: number;
  /** Mean bytes of a snapshot's JSON text. */
  meanSnapshotBytes: number;
}

/**
 * `SELECT snapshot FROM os_snapshot_json WHERE session_id = $1` for random sessions (seeded),
 * one after the other on one connection. Timed from the client, it includes the round trip over
 * the loopback and the parse of the JSON result. `warmup` queries first, then `runs` runs of
 * `queries`.
 */
export async function measureQuery(
  url: string,
  db: Kysely<DB>,
  seed: string,
  options: { runs: number; queries: number; warmup: number },
): Promise<Omit<QueryFigures, 'projectedSessions' | 'tablesBytes'>> {
  const { total, ids } = await sessionIdsToQuery(db, seed, QUERIED_SESSIONS_MAX);
  const prng = new Prng(`${seed}/query`);
  const client = new pg.Client({ connectionString: url, application_name: 'os-audit-bench-query' });
  await client.connect();
  try {
    const query = 'SELECT snapshot FROM os_snapshot_json WHERE session_id = $1';
    let bytes = 0;
    for (let i = 0; i < options.warmup; i++) {
      const result = await client.query(query, [prng.pick(ids)]);
      bytes += JSON.stringify(result.rows[0]?.snapshot ?? null).length;
    }
    const runs: QueryFigures['runs'] = [];
    for (let run = 0; run < options.runs; run++) {
      const times: number[] = [];
      for (let i = 0; i < options.queries; i++) {
        const id = prng.pick(ids);
        const sent = performance.now();
        const result = await client.query(query, [id]);
        times.push(performance.now() - sent);
        if (result.rows.length !== 1) throw new Error(`no snapshot for ${id}`);
      }
      runs.push({ p50Ms: percentile(times, 50), p99Ms: percentile(times, 99), maxMs: Math.max(...times) });
    }
    return {
      sessions: total,
      queriesPerRun: options.queries,
      runs,
      p50Ms: median(runs.map((r) => r.p50Ms)),
      p99Ms: median(runs.map((r) => r.p99Ms)),
      meanSnapshotBytes: Math.round(bytes / Math.max(1, options.warmup)),
    };
  } finally {
    await client.end();
  }
}
