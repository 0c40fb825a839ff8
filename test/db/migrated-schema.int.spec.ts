import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { migrations } from '../../migrations/index.js';
import { generateDbTypes, SCHEMA_TYPES_FILE } from '../../scripts/db-types.js';
import { describeSchema } from '../support/describe-schema.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();

describe('the migrated schema', () => {
  it('matches the committed DB types (run `npm run db:types` after changing a migration)', async () => {
    const generated = await generateDbTypes(testDb.url);
    expect(generated).toBe(readFileSync(SCHEMA_TYPES_FILE, 'utf8'));
  });

  it('registers every migration file of migrations/', () => {
    const folder = fileURLToPath(new URL('../../migrations', import.meta.url));
    const files = readdirSync(folder)
      .filter((name) => name !== 'index.ts' && name.endsWith('.ts'))
      .map((name) => name.slice(0, -'.ts'.length));
    expect(Object.keys(migrations).sort()).toEqual(files.sort());
  });

  it('is pinned: tables, views, columns, constraints, indexes, functions, triggers', async () => {
    await expect(await describeSchema(testDb.db)).toMatchFileSnapshot('./migrated-schema.snapshot.txt');
  });
});
