import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { preparedStatement } from '../../src/db/prepared-statement.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase({ migrate: false });

describe('preparedStatement', () => {
  it('is prepared once per connection, runs each time, and stays prepared after a rollback', async () => {
    await testDb.db.connection().execute(async (connection) => {
      await sql`CREATE TEMP TABLE prepared_probe (n int)`.execute(connection);
      const insert = preparedStatement(connection, 'probe_insert', sql`INSERT INTO prepared_probe VALUES (1)`);
      expect(insert.name).toMatch(/^probe_insert_[0-9a-f]{12}$/);
      const isPrepared = async () => (await insert.isPrepared.execute(connection)).rows[0]!.prepared;
      expect(await isPrepared()).toBe(false);
      await connection
        .transaction()
        .execute(async (trx) => {
          await insert.prepare.execute(trx);
          throw new Error('roll back');
        })
        .catch(() => {});
      expect(await isPrepared()).toBe(true);
      await insert.execute.execute(connection);
      await insert.execute.execute(connection);
      const { rows: count } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM prepared_probe`.execute(connection);
      expect(count[0]!.n).toBe(2);

      // Another text under the same name is another statement.
      const other = preparedStatement(connection, 'probe_insert', sql`INSERT INTO prepared_probe VALUES (2)`);
      expect(other.name).not.toBe(insert.name);
      expect((await other.isPrepared.execute(connection)).rows[0]!.prepared).toBe(false);
    });
  });

  it('refuses a statement with parameters', () => {
    expect(() => preparedStatement(testDb.db, 'with_parameter', sql`SELECT ${1}`)).toThrow(/must not take parameters/);
  });
});
