import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { executePrepared } from '../../src/db/prepared-statement.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase({ migrate: false });

describe('executePrepared', () => {
  it('prepares a statement once per connection and runs it each time, even after a rollback', async () => {
    await testDb.db.connection().execute(async (connection) => {
      await sql`CREATE TEMP TABLE prepared_probe (n int)`.execute(connection);
      const insert = sql`INSERT INTO prepared_probe VALUES (1)`;
      await connection
        .transaction()
        .execute(async (trx) => {
          await executePrepared(trx, 'probe_insert', insert);
          throw new Error('roll back');
        })
        .catch(() => {});
      await executePrepared(connection, 'probe_insert', insert);
      await executePrepared(connection, 'probe_insert', insert);
      const { rows } = await sql<{ name: string }>`SELECT name FROM pg_prepared_statements`.execute(connection);
      expect(rows.map((row) => row.name)).toEqual([expect.stringMatching(/^probe_insert_[0-9a-f]{12}$/)]);
      const { rows: count } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM prepared_probe`.execute(connection);
      expect(count[0]!.n).toBe(2);

      // Another text under the same name is another statement.
      await executePrepared(connection, 'probe_insert', sql`INSERT INTO prepared_probe VALUES (2)`);
      const { rows: names } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_prepared_statements`.execute(connection);
      expect(names[0]!.n).toBe(2);
    });
  });

  it('refuses a statement with parameters', async () => {
    await expect(executePrepared(testDb.db, 'with_parameter', sql`SELECT ${1}`)).rejects.toThrow(/must not take parameters/);
  });
});
