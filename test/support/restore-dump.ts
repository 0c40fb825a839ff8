import { readFile } from 'node:fs/promises';
import { withClient } from './scratch-database.js';

/**
 * Runs a plain-SQL `pg_dump` (made with `--inserts`, so that it holds no `COPY … FROM stdin`)
 * in the database of `url`, on a connection of its own: the dump empties its `search_path`.
 * psql's meta-commands (`\restrict`, …) are left out.
 */
export async function restoreDump(url: string, file: string | URL): Promise<void> {
  const text = await readFile(file, 'utf8');
  const statements = text
    .split('\n')
    .filter((line) => !line.startsWith('\\'))
    .join('\n');
  await withClient(url, (client) => client.query(statements));
}
