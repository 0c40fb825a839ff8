import { type Kysely, sql } from 'kysely';
import type { DB } from '../src/db/schema.js';

/** Bytes on disk of the event store's tables. */
export interface DiskSize {
  events: number;
  /** `session_events`: heap with TOAST, free-space and visibility maps. */
  eventsTableBytes: number;
  eventsIndexBytes: number;
  /** `sessions`, table and indexes. */
  sessionsBytes: number;
  /** All of the above per million events. */
  bytesPerMillionEvents: number;
}

export async function diskSize(db: Kysely<DB>): Promise<DiskSize> {
  const { rows } = await sql<{ events: number; table: number; indexes: number; sessions: number }>`
    SELECT (SELECT count(*) FROM session_events)::int AS events,
      pg_table_size('session_events')::bigint AS table,
      pg_indexes_size('session_events')::bigint AS indexes,
      pg_total_relation_size('sessions')::bigint AS sessions`.execute(db);
  const row = rows[0]!;
  const total = row.table + row.indexes + row.sessions;
  return {
    events: row.events,
    eventsTableBytes: row.table,
    eventsIndexBytes: row.indexes,
    sessionsBytes: row.sessions,
    bytesPerMillionEvents: (total / Math.max(1, row.events)) * 1e6,
  };
}

export function describeDiskSize(size: DiskSize): string {
  const mb = (bytes: number) => (bytes / 1024 ** 2).toFixed(0);
  return (
    `${mb(size.bytesPerMillionEvents)} MB per million events ` +
    `(session_events ${mb(size.eventsTableBytes)} MB table + ${mb(size.eventsIndexBytes)} MB indexes, ` +
    `sessions ${mb(size.sessionsBytes)} MB, for ${size.events.toLocaleString('en-US')} events)`
  );
}
