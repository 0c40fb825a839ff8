import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { migrateToLatest } from '../../src/migrate-to-latest.js';
import { openDatabase } from '../../src/db/open-database.js';
import type { DB } from '../../src/db/schema.js';

export interface ScratchDatabase {
  /** Connection string of the new database. */
  url: string;
  name: string;
  db: Kysely<DB>;
  drop(): Promise<void>;
}

/**
 * Creates a database with a unique name on the server of `serverUrl` (a superuser connection),
 * migrated unless `migrate: false`; `drop()` closes it and removes it.
 */
export async function createScratchDatabase(serverUrl: string, options: { migrate?: boolean } = {}): Promise<ScratchDatabase> {
  const name = `os_audit_test_${randomBytes(6).toString('hex')}`;
  await withClient(serverUrl, (admin) => admin.query(`CREATE DATABASE ${name}`));
  const url = databaseUrl(serverUrl, name);
  const db = openDatabase({ connectionString: url, applicationName: 'os-audit-test' });
  if (options.migrate ?? true) await migrateToLatest(db);
  return {
    url,
    name,
    db,
    drop: async () => {
      await db.destroy();
      await dropDatabase(serverUrl, name);
    },
  };
}

/** Drops `name` on the server of `serverUrl` (a superuser connection), ending whatever still uses it. */
export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  await withClient(serverUrl, async (admin) => {
    // pg's pool resolves end() before its sockets close: let them go before dropping, so
    // that FORCE only ends connections a test leaked, not ones already on their way out.
    // The tests' connections only: Citus's maintenance daemon and the connections it opens
    // itself (application citus_internal) stay until the drop.
    const ours = "backend_type = 'client backend' AND application_name NOT LIKE 'citus\\_internal%'";
    for (let attempt = 0; attempt < 50; attempt += 1) {
      const { rows } = await admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND ${ours}`, [name]);
      if (rows[0].n === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });
}

export function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

export async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
