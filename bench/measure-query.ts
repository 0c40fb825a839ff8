import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import type { DB } from '../src/db/schema.js';
import { Prng } from './prng.js';
import { median, percentile, secondsSince } from './stats.js';

const SNAPSHOT_TABLES = ['os_snapshots', 'os_processes', 'os_signals', 'os_budget_exceeded'] as const;

/**
 * Grows the snapshot tables to `target` sessions by copying the projected sessions under new
 * ids (`<id>~<n>`), with their processes, signals and budget events: the query reads only the
 * snapshot tables, so this is a database of `target` sessions of the corpus's shape without
 * storing `target` × 200 events. Returns the sessions there were and there are.
 */
export async function growSnapshotTables(db: Kysely<DB>, target: number): Promise<{ projected: number; total: number; seconds: number }> {
  const started = performance.now();
  const count = async () => (await sql<{ n: number }>`SELECT count(*)::int AS n FROM os_snapshots`.execute(db)).rows[0]!.n;
  const projected = await count();
  if (projected === 0) throw new Error('no snapshots to grow from');
  const needed = target - projected;
  if (needed > 0) {
    await db.transaction().execute(async (trx) => {
      await sql`
        CREATE TEMP TABLE bench_copies ON COMMIT DROP AS
        SELECT s.session_id AS original, s.session_id || '~' || r AS copy
        FROM generate_series(1, ${Math.ceil(needed / projected)}::int) AS r, os_snapshots AS s
        ORDER BY r, s.session_id
        LIMIT ${needed}`.execute(trx);
      await sql`CREATE INDEX ON bench_copies (original)`.execute(trx);
      for (const table of SNAPSHOT_TABLES) {
        const { rows } = await sql<{ column_name: string }>`
          SELECT column_name FROM information_schema.columns
          WHERE table_schema = current_schema() AND table_name = ${table} ORDER BY ordinal_position`.execute(trx);
        const columns = rows.map((row) => row.column_name);
        const values = columns.map((column) => (column === 'session_id' ? sql`c.copy` : sql`t.${sql.ref(column)}`));
        await sql`
          INSERT INTO ${sql.table(table)} (${sql.join(columns.map((column) => sql.ref(column)))})
          SELECT ${sql.join(values)}
          FROM bench_copies AS c JOIN ${sql.table(table)} AS t ON t.session_id = c.original`.execute(trx);
      }
    });
  }
  for (const table of SNAPSHOT_TABLES) await sql`VACUUM ANALYZE ${sql.table(table)}`.execute(db);
  await sql`CHECKPOINT`.execute(db);
  return { projected, total: await count(), seconds: secondsSince(started) };
}

export interface QueryFigures {
  sessions: number;
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
 * one after the other on one connection, timed from the client (the round trip over the
 * loopback, the parse of the JSON result included); `warmup` queries first, then `runs` runs
 * of `queries`.
 */
export async function measureQuery(
  url: string,
  db: Kysely<DB>,
  seed: string,
  options: { runs: number; queries: number; warmup: number },
): Promise<Omit<QueryFigures, 'projectedSessions'>> {
  const { rows } = await sql<{ session_id: string }>`SELECT session_id FROM os_snapshots`.execute(db);
  const ids = rows.map((row) => row.session_id);
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
      sessions: ids.length,
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
