import { type Kysely, type Migration, type RawBuilder, sql } from 'kysely';
import { storeIsDistributed } from '../db/distributed-store.js';
import { PROJECTOR_ROLE, READER_ROLE } from './register-projections.js';

/** A projection's snapshot view, as {@link plannedOnceSnapshotView} remakes it. */
export interface SnapshotViewParts {
  /** The view: `session_id` and `snapshot`. */
  view: string;
  /** The projection's heads table, one row per session, read as `s`. */
  heads: string;
  /** The snapshot's JSON, from the heads row `s` (and subqueries of the list tables keyed by `s.session_id`). */
  json: RawBuilder<unknown>;
}

/**
 * A migration that makes a snapshot view (`SELECT s.session_id, JSON AS snapshot FROM HEADS s`)
 * call a PL/pgSQL function `VIEW_of(s)` returning the same JSON. A view is expanded and
 * planned again at each query sent unprepared (as psql, Grafana and `os-audit snapshot` send
 * them): for a snapshot built by correlated subqueries, that planning took more than half of a
 * one-session lookup. PL/pgSQL keeps the plan of its expression for the connection's life, so a
 * lookup plans only a primary-key read; a scan of every session pays a function call per row
 * instead, about a third slower.
 *
 * The function runs as its caller, who needs SELECT on the projection's tables (as the reader
 * and projector roles have). It keeps the migration's search_path: a reader whose search_path
 * does not name this schema still reads these tables. On Citus the view is left as it
 * is: there a function reading distributed tables would be called on each row's worker.
 * `down` makes the plain view again.
 *
 * @example
 * ```ts
 * migrations: { '0004-snapshot-json-planned-once': plannedOnceSnapshotView({ view: 'tool_calls_json', heads: 'tool_call_heads', json: toolCallsJson }) }
 * ```
 */
export function plannedOnceSnapshotView({ view, heads, json }: SnapshotViewParts): Migration {
  const fn = sql.id(`${view}_of`);
  const signature = sql`${fn}(${sql.table(heads)})`;
  const viewOf = (snapshot: RawBuilder<unknown>) =>
    sql`CREATE OR REPLACE VIEW ${sql.table(view)} AS SELECT s.session_id, ${snapshot} AS snapshot FROM ${sql.table(heads)} s`;
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (await storeIsDistributed(db)) return;
      await sql`
        CREATE FUNCTION ${fn}(s ${sql.table(heads)}) RETURNS json
        LANGUAGE plpgsql STABLE SET search_path FROM CURRENT AS $$
        BEGIN
          RETURN ${json};
        END
        $$`.execute(db);
      await sql`GRANT EXECUTE ON FUNCTION ${signature} TO ${sql.id(READER_ROLE)}, ${sql.id(PROJECTOR_ROLE)}`.execute(db);
      await viewOf(sql`${fn}(s)`).execute(db);
    },
    async down(db: Kysely<unknown>): Promise<void> {
      if (await storeIsDistributed(db)) return;
      await viewOf(json).execute(db);
      await sql`DROP FUNCTION ${signature}`.execute(db);
    },
  };
}
