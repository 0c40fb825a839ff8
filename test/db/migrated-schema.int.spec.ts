import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { migrations } from '../../migrations/index.js';
import { generateDbTypes, SCHEMA_TYPES_FILE } from '../../scripts/db-types.js';
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
    const { rows } = await sql<{ line: string }>`
      SELECT format('column %s.%s %s%s%s', c.table_name, c.column_name, c.data_type,
                    CASE WHEN c.is_nullable = 'NO' THEN ' not null' ELSE '' END,
                    CASE WHEN c.is_identity = 'YES' THEN ' identity ' || c.identity_generation
                         WHEN c.column_default IS NOT NULL THEN ' default ' || c.column_default ELSE '' END) AS line
      FROM information_schema.columns c
      WHERE c.table_schema = 'public' AND c.table_name NOT LIKE 'kysely_%'
      UNION ALL
      SELECT format('constraint %s %s', conrelid::regclass, pg_get_constraintdef(oid))
      FROM pg_constraint WHERE connamespace = 'public'::regnamespace AND conrelid::regclass::text NOT LIKE 'kysely_%'
      UNION ALL
      SELECT format('index %s', indexdef) FROM pg_indexes WHERE schemaname = 'public' AND tablename NOT LIKE 'kysely_%'
      UNION ALL
      SELECT format('function %s returns %s', p.oid::regprocedure, format_type(p.prorettype, NULL))
      FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace
      UNION ALL
      SELECT format('view %s', viewname) FROM pg_views WHERE schemaname = 'public'
      UNION ALL
      SELECT format('trigger %s %s', pg_get_triggerdef(t.oid), CASE t.tgenabled WHEN 'A' THEN '(always)' ELSE '' END)
      FROM pg_trigger t WHERE NOT t.tgisinternal
      ORDER BY 1`.execute(testDb.db);
    await expect(`${rows.map((row) => row.line).join('\n')}\n`).toMatchFileSnapshot('./migrated-schema.snapshot.txt');
  });
});
