import { createHash } from 'node:crypto';
import { type Kysely, type RawBuilder, sql } from 'kysely';

/** A statement to prepare once per connection and run many times. */
export interface PreparedStatement {
  /** Its name on a connection: the given name and a hash of its text. */
  readonly name: string;
  /** Prepares it on the connection that runs this (not undone by a rollback). */
  readonly prepare: RawBuilder<unknown>;
  /** Runs it; it must have been prepared on this connection. */
  readonly execute: RawBuilder<unknown>;
  /** Whether it is prepared on the connection that runs this: `{ prepared: boolean }`. */
  readonly isPrepared: RawBuilder<{ prepared: boolean }>;
}

/**
 * A statement without parameters as a prepared statement. PostgreSQL then plans it once per
 * connection instead of at every call, which matters for a large statement run often on little
 * data. The name carries a hash of the text, so that a changed statement (another os-audit
 * version on a shared pooler connection) is prepared afresh.
 *
 * @example
 * ```ts
 * const fold = preparedStatement(db, `${projection.name}_fold`, foldBatchSql(projection));
 * if (!(await fold.isPrepared.execute(trx)).rows[0]!.prepared) await fold.prepare.execute(trx);
 * await fold.execute.execute(trx);
 * ```
 */
export function preparedStatement(db: Kysely<any>, name: string, statement: RawBuilder<unknown>): PreparedStatement {
  const compiled = statement.compile(db);
  if (compiled.parameters.length > 0) throw new Error(`prepared statement ${name} must not take parameters`);
  const prepared = `${name}_${createHash('sha256').update(compiled.sql).digest('hex').slice(0, 12)}`;
  return {
    name: prepared,
    prepare: sql`PREPARE ${sql.id(prepared)} AS ${statement}`,
    execute: sql`EXECUTE ${sql.id(prepared)}`,
    isPrepared: sql<{ prepared: boolean }>`SELECT EXISTS (SELECT FROM pg_prepared_statements WHERE name = ${prepared}) AS prepared`,
  };
}
