import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CitusCluster, startCitusCluster } from '../support/citus-cluster.js';
import { citusTestCluster, citusTestsRun, useCitusDatabase } from '../support/citus-database.js';
import { createCitusScratchDatabase } from '../support/citus-scratch-database.js';
import type { ScratchDatabase } from '../support/scratch-database.js';

/** A table distributed by a text column, as a session log would be, with rows of 100 sessions. */
async function distributedTable(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE events (session_id text NOT NULL, seq bigint NOT NULL, PRIMARY KEY (session_id, seq))`.execute(db);
  await sql`SELECT create_distributed_table('events', 'session_id')`.execute(db);
  await sql`INSERT INTO events SELECT 'session-' || s, q FROM generate_series(1, 100) s, generate_series(0, 2) q`.execute(db);
}

describe.runIf(citusTestsRun)('the Citus test cluster', () => {
  describe('a database of the shared cluster', () => {
    const testDb = useCitusDatabase({ migrate: false });

    it('has both workers registered, and a distributed table has rows on each', async () => {
      const db = testDb.db as unknown as Kysely<unknown>;
      const workerPorts = citusTestCluster().workerUrls.map((url) => Number(new URL(url).port));
      const { rows: workers } = await sql<{ node_port: number }>`SELECT node_port FROM citus_get_active_worker_nodes() ORDER BY node_port`.execute(db);
      expect(workers.map((worker) => worker.node_port)).toEqual([...workerPorts].sort((a, b) => a - b));

      await distributedTable(db);
      const { rows } = await sql<{ nodeport: number; rows: number }>`
        SELECT nodeport, sum(result::int)::int AS rows
        FROM run_command_on_shards('events', 'SELECT count(*) FROM %s') JOIN citus_shards USING (shardid)
        GROUP BY nodeport ORDER BY nodeport`.execute(db);
      expect(rows.map((row) => row.nodeport)).toEqual([...workerPorts].sort((a, b) => a - b));
      for (const row of rows) expect(row.rows).toBeGreaterThan(0);
      expect(rows.reduce((sum, row) => sum + row.rows, 0)).toBe(300);
    });
  });

  describe('a worker stopped and started again', () => {
    // A cluster of its own: stopping a worker of the shared one would fail other files' tests.
    let cluster: CitusCluster | undefined;
    let scratch: ScratchDatabase | undefined;
    beforeAll(async () => {
      cluster = await startCitusCluster({ workers: 2 });
      scratch = await createCitusScratchDatabase(cluster, { migrate: false });
    });
    afterAll(async () => {
      await scratch?.drop();
      await cluster?.stop();
    });

    it('fails the queries that touch it while it is down, and serves them again once it is up', async () => {
      const db = scratch!.db as unknown as Kysely<unknown>;
      const worker = cluster!.workers[0]!;
      await distributedTable(db);
      const count = sql<{ n: number }>`SELECT count(*)::int AS n FROM events`;
      expect((await count.execute(db)).rows[0]!.n).toBe(300);

      await worker.stop('immediate');
      await expect(count.execute(db)).rejects.toThrow(new RegExp(`127\\.0\\.0\\.1:${worker.port}`));

      await worker.start();
      expect((await count.execute(db)).rows[0]!.n).toBe(300);
    });
  });
});
