import { type RawBuilder, sql } from 'kysely';

/** Where the log's events live: one row store, or partitions by transaction (sealed ones columnar). */
export interface EventLogLayout {
  /** `session_events` is partitioned by range of `transaction_id`. */
  partitioned: boolean;
  /** The heap partition that takes appends (transactions from `from` on; null: from the first), when partitioned. */
  hot: { table: string; from: string | null } | undefined;
}

/** The layout of `session_events`: its kind of relation and, when partitioned, its open-ended partition. */
export function eventLogLayoutSql(): RawBuilder<{ kind: string; hot_table: string | null; hot_bound: string | null }> {
  return sql`
    SELECT c.relkind::text AS kind, hot.relname::text AS hot_table, pg_get_expr(hot.relpartbound, hot.oid) AS hot_bound
    FROM pg_class AS c
    LEFT JOIN LATERAL (
      SELECT p.oid, p.relname, p.relpartbound FROM pg_inherits AS i JOIN pg_class AS p ON p.oid = i.inhrelid
      WHERE i.inhparent = c.oid AND pg_get_expr(p.relpartbound, p.oid) LIKE '%TO (MAXVALUE)'
    ) AS hot ON true
    WHERE c.oid = 'session_events'::regclass`;
}

/** The sealed partitions of `session_events` (those `USING columnar`) and their bounds. */
export function sealedPartitionsSql(): RawBuilder<{ name: string; bound: string }> {
  return sql`
    SELECT p.relname::text AS name, pg_get_expr(p.relpartbound, p.oid) AS bound
    FROM pg_inherits AS i JOIN pg_class AS p ON p.oid = i.inhrelid JOIN pg_am AS am ON am.oid = p.relam
    WHERE i.inhparent = 'session_events'::regclass AND am.amname = 'columnar'`;
}

/**
 * What the conversion to partitions must carry from the row store to the new parent. That is
 * its triggers (as `CREATE TRIGGER` text, and whether they fire always), the views that read
 * it, its owner, the privileges granted on it, and where its identity has reached.
 */
export function rowStoreFactsSql(): RawBuilder<{
  triggers: { definition: string; name: string; always: boolean }[];
  views: string[];
  owner: string;
  grants: string[];
  next_position: string;
}> {
  return sql`
    SELECT
      (SELECT coalesce(json_agg(json_build_object('definition', pg_get_triggerdef(t.oid), 'name', t.tgname, 'always', t.tgenabled = 'A') ORDER BY t.tgname), '[]')
         FROM pg_trigger AS t WHERE t.tgrelid = 'session_events'::regclass AND NOT t.tgisinternal) AS triggers,
      (SELECT coalesce(json_agg(DISTINCT v.oid::regclass::text), '[]')
         FROM pg_depend AS d JOIN pg_rewrite AS r ON r.oid = d.objid JOIN pg_class AS v ON v.oid = r.ev_class
         WHERE d.refobjid = 'session_events'::regclass AND d.classid = 'pg_rewrite'::regclass AND v.oid <> 'session_events'::regclass) AS views,
      (SELECT c.relowner::regrole::text FROM pg_class AS c WHERE c.oid = 'session_events'::regclass) AS owner,
      (SELECT coalesce(json_agg(g.statement ORDER BY g.statement), '[]') FROM (
         SELECT format('GRANT %s ON session_events TO %s', a.privilege_type, CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END) AS statement
         FROM pg_class AS c, aclexplode(c.relacl) AS a
         WHERE c.oid = 'session_events'::regclass AND a.grantee <> c.relowner
         UNION ALL
         SELECT format('GRANT %s (%I) ON session_events TO %s', a.privilege_type, col.attname, CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END)
         FROM pg_attribute AS col, aclexplode(col.attacl) AS a
         WHERE col.attrelid = 'session_events'::regclass AND col.attacl IS NOT NULL AND NOT col.attisdropped
       ) AS g) AS grants,
      (coalesce(pg_sequence_last_value(pg_get_serial_sequence('session_events', 'position')::regclass), 0) + 1)::text AS next_position`;
}

/**
 * Where a seal may end: the transaction of the oldest checkpoint among the registered
 * projections, or with none registered the oldest transaction still running. Every older
 * transaction has ended and is folded. The checkpoint's own stays unsealed, so a batch, which
 * reads from its checkpoint's transaction on, leaves every sealed partition unread. No event
 * can ever be added to the transactions before it.
 */
export function sealableEndSql(): RawBuilder<{ end: string }> {
  return sql`
    SELECT least(pg_snapshot_xmin(pg_current_snapshot()), (SELECT min(transaction_id) FROM projection_checkpoints))::text AS "end"`;
}

/**
 * Copies the events of transactions `[from, to)` of the hot partition into the sealed table, a
 * session's events together. A read of one session's log (or a trigger's look-up of one seq)
 * then finds them in one or two columnar chunk groups, whatever the partition's size.
 */
export function copyRangeSql(hot: string, sealed: string, from: string | null, to: string): RawBuilder<unknown> {
  return sql`
    INSERT INTO ${sql.table(sealed)}
    SELECT * FROM ${sql.table(hot)}
    WHERE transaction_id < ${to}::xid8 ${from === null ? sql`` : sql`AND transaction_id >= ${from}::xid8`}
    ORDER BY session_id, seq`;
}

/**
 * How many events of the hot partition belong to transactions from `to` on, which a swap moves
 * to the new heap partition, counted up to `limit`. Read by index and bounded, the count under
 * the swap's lock costs little however far the projections are behind.
 */
export function unsealedCountSql(hot: string, to: string, limit: number): RawBuilder<{ count: number }> {
  return sql`
    SELECT count(*)::int AS count
    FROM (SELECT FROM ${sql.table(hot)} WHERE transaction_id >= ${to}::xid8 LIMIT ${limit}) AS unsealed`;
}
