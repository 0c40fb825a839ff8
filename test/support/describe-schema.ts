import { type Kysely, sql } from 'kysely';

/**
 * The schema of `db`, one sorted line per table column, view, constraint, index, function and
 * trigger of `public` (kysely's own tables left out): what `migrated-schema.snapshot.txt` pins.
 * With `definitions`, also each column's place, each view's and function's text, and every
 * privilege: enough to tell two databases migrated along different paths apart.
 */
export async function describeSchema(db: Kysely<any>, options: { definitions?: boolean } = {}): Promise<string> {
  const definitions = sql`
      UNION ALL
      -- The place among the columns there are: a restored dump holds no dropped column.
      SELECT format('column %s.%s at %s', c.table_name, c.column_name,
                    row_number() OVER (PARTITION BY c.table_name ORDER BY c.ordinal_position))
      FROM information_schema.columns c
      WHERE c.table_schema = 'public' AND c.table_name NOT LIKE 'kysely_%'
      UNION ALL
      SELECT format('view %s as %s', viewname, definition) FROM pg_views WHERE schemaname = 'public'
      UNION ALL
      SELECT format('function %s as %s', p.oid::regprocedure, pg_get_functiondef(p.oid))
      FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace
      UNION ALL
      SELECT format('privileges %s %s', c.oid::regclass, c.relacl) FROM pg_class c
      WHERE c.relnamespace = 'public'::regnamespace AND c.relacl IS NOT NULL AND c.relname NOT LIKE 'kysely_%'
      UNION ALL
      SELECT format('privileges %s.%s %s', c.oid::regclass, a.attname, a.attacl)
      FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
      WHERE c.relnamespace = 'public'::regnamespace AND a.attacl IS NOT NULL AND NOT a.attisdropped
      UNION ALL
      SELECT format('privileges %s %s', p.oid::regprocedure, p.proacl)
      FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace AND p.proacl IS NOT NULL`;
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
      ${options.definitions ? definitions : sql``}
      ORDER BY 1`.execute(db);
  return `${rows.map((row) => row.line).join('\n')}\n`;
}
