import { randomBytes } from 'node:crypto';
import { migrateToLatest } from '../../src/migrate-to-latest.js';
import { openDatabase } from '../../src/db/open-database.js';
import type { CitusNodes } from './citus-cluster.js';
import { type ScratchDatabase, databaseUrl, dropDatabase, withClient } from './scratch-database.js';

/**
 * Creates a database with a unique name on every node of a Citus cluster, migrated unless
 * `migrate: false`. Citus is created in it on every node, with the coordinator and workers
 * registered in it: Citus keeps its nodes per database, and creates no database on the workers
 * itself. `drop()` closes it and removes it from every node.
 *
 * @example
 * ```ts
 * const scratch = await createCitusScratchDatabase(cluster, { migrate: false });
 * await sql`SELECT create_distributed_table('t', 'session_id')`.execute(scratch.db);
 * await scratch.drop();
 * ```
 */
export async function createCitusScratchDatabase(cluster: CitusNodes, options: { migrate?: boolean } = {}): Promise<ScratchDatabase> {
  const name = `os_audit_citus_${randomBytes(6).toString('hex')}`;
  const nodeUrls = [cluster.coordinatorUrl, ...cluster.workerUrls];
  await Promise.all(
    nodeUrls.map(async (nodeUrl) => {
      await withClient(nodeUrl, (admin) => admin.query(`CREATE DATABASE ${name}`));
      await withClient(databaseUrl(nodeUrl, name), (client) => client.query('CREATE EXTENSION citus'));
    }),
  );
  const url = databaseUrl(cluster.coordinatorUrl, name);
  await withClient(url, async (coordinator) => {
    await coordinator.query('SELECT citus_set_coordinator_host($1, $2)', hostAndPort(cluster.coordinatorUrl));
    for (const workerUrl of cluster.workerUrls) await coordinator.query('SELECT citus_add_node($1, $2)', hostAndPort(workerUrl));
  });
  const db = openDatabase({ connectionString: url, applicationName: 'os-audit-test' });
  const scratch: ScratchDatabase = {
    url,
    name,
    db,
    drop: async () => {
      await db.destroy();
      // The coordinator first: its sessions hold the connections to the workers.
      for (const nodeUrl of nodeUrls) await dropDatabase(nodeUrl, name);
    },
  };
  if (options.migrate ?? true) {
    // A migration that Citus refuses must not leave the database on the cluster.
    await migrateToLatest(db).catch(async (error: unknown) => {
      await scratch.drop();
      throw error;
    });
  }
  return scratch;
}

/** `[host, port]` of a node's URL, as the parameters of `citus_add_node`. */
function hostAndPort(nodeUrl: string): [string, number] {
  const { hostname, port } = new URL(nodeUrl);
  return [hostname, Number(port)];
}
