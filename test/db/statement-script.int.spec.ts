import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { withPinnedConnection } from '../../src/db/pinned-connection.js';
import { runScript } from '../../src/db/statement-script.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase({ migrate: false });

describe('runScript', () => {
  it('runs statements in one query and gives each result in order; parameters keep their meaning', async () => {
    await withPinnedConnection(testDb.db, async ({ client, db }) => {
      const script = [sql`SELECT ${"it's"} AS text, ${41}::int + 1 AS answer`, sql`SELECT ${'\\'} AS backslash, ${5000} * interval '1 millisecond' AS span`];
      const results = await runScript(client, script.map((statement) => statement.compile(db)));
      expect(results.map((result) => result.rows[0])).toEqual([
        { text: "it's", answer: 42 },
        { backslash: '\\', span: expect.objectContaining({ seconds: 5 }) },
      ]);
    });
  });

  it('stops at the first statement that fails: nothing after it runs', async () => {
    await withPinnedConnection(testDb.db, async ({ client, db }) => {
      await client.query('CREATE TEMP TABLE script_probe (n int)');
      const script = [sql`BEGIN`, sql`INSERT INTO script_probe VALUES (1)`, sql`SELECT 1 / 0`, sql`INSERT INTO script_probe VALUES (2)`, sql`COMMIT`];
      await expect(runScript(client, script.map((statement) => statement.compile(db)))).rejects.toMatchObject({ code: '22012' });
      await client.query('ROLLBACK');
      expect((await client.query('SELECT count(*)::int AS n FROM script_probe')).rows[0]).toEqual({ n: 0 });
    });
  });
});
