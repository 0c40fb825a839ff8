import { createHash } from 'node:crypto';
import { type Kysely, type RawBuilder, sql } from 'kysely';

/**
 * Runs a statement without parameters through a prepared statement of this connection,
 * preparing it on first use. PostgreSQL then plans it once per connection instead of at every
 * call, which matters for a large statement run often on little data. The name carries a hash
 * of the text, so a changed statement (another os-audit version on a shared pooler connection)
 * is prepared afresh. Preparing is not undone by a rollback, so the check stays cheap.
 *
 * @example
 * ```ts
 * await executePrepared(trx, 'os_snapshot_apply', applyOsSnapshotEventsSql());
 * ```
 */
export async function executePrepared(db: Kysely<any>, name: string, statement: RawBuilder<unknown>): Promise<void> {
  const compiled = statement.compile(db);
  if (compiled.parameters.length > 0) throw new Error(`prepared statement ${name} must not take parameters`);
  const prepared = `${name}_${createHash('sha256').update(compiled.sql).digest('hex').slice(0, 12)}`;
  const { rows } = await sql<{ found: boolean }>`SELECT EXISTS (SELECT FROM pg_prepared_statements WHERE name = ${prepared}) AS found`.execute(db);
  if (!rows[0]!.found) await sql`PREPARE ${sql.id(prepared)} AS ${statement}`.execute(db);
  await sql`EXECUTE ${sql.id(prepared)}`.execute(db);
}
