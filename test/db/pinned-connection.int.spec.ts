import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/open-database.js';
import { withPinnedConnection } from '../../src/db/pinned-connection.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase({ migrate: false });

describe('withPinnedConnection', () => {
  it('gives no connection back to the pool inside a transaction, open or failed: it is closed, and the next user gets a clean one', async () => {
    // One connection: were it given back as it was left, the next query would run on it.
    const db = openDatabase({ connectionString: testDb.url, maxConnections: 1 });
    try {
      await sql`CREATE TABLE pinned_probe (n int)`.execute(db);
      const leftBehind = async (work: (client: import('pg').PoolClient) => Promise<void>) => {
        const pid = (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(db)).rows[0]!.pid;
        await expect(withPinnedConnection(db, async ({ client }) => work(client))).rejects.toThrow('as a lost connection would');
        return pid;
      };
      // Failed: as when a statement fails for a reason taken for a lost connection and no ROLLBACK follows.
      await leftBehind(async (client) => {
        await client.query('BEGIN');
        await client.query('SELECT 1 / 0').catch(() => {});
        throw new Error('given up, as a lost connection would');
      });
      expect((await sql<{ n: number }>`SELECT count(*)::int AS n FROM pinned_probe`.execute(db)).rows[0]).toEqual({ n: 0 });
      // Open: its insert must not be committed by whoever uses the connection next.
      const before = await leftBehind(async (client) => {
        await client.query('BEGIN');
        await client.query('INSERT INTO pinned_probe VALUES (1)');
        throw new Error('given up, as a lost connection would');
      });
      await sql`INSERT INTO pinned_probe VALUES (2)`.execute(db);
      expect((await sql<{ n: number }>`SELECT n FROM pinned_probe`.execute(db)).rows).toEqual([{ n: 2 }]);
      expect((await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(db)).rows[0]!.pid).not.toBe(before);
    } finally {
      await db.destroy();
    }
  });
});
