import { type Kysely, sql } from 'kysely';
import type { DB } from '../src/db/schema.js';
import { createScratchDatabase } from '../test/support/scratch-database.js';
import { loadRows, probeEventLayout } from './copy-rows.js';
import { CorpusStats, InterleavedCorpus, SMALL_BODIES } from './corpus.js';
import { otherLoad } from './other-load.js';

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
  /** UTF-8 bytes of the stored events' JSON as written (the bodies, without session ids or seqs), per million events. */
  rawJsonBytesPerMillionEvents: number;
  /** The size on disk over the raw JSON: what storing the log costs over the bytes the runtime wrote. */
  ratioToRawJson: number;
}

/** The sizes of the event store's tables, holding events of `rawJsonBytes` bytes of JSON in all. */
export async function diskSize(db: Kysely<DB>, rawJsonBytes: number): Promise<DiskSize> {
  const { rows } = await sql<{ events: number; table: number; indexes: number; sessions: number }>`
    SELECT (SELECT count(*) FROM session_events)::int AS events,
      pg_table_size('session_events')::bigint AS table,
      pg_indexes_size('session_events')::bigint AS indexes,
      pg_total_relation_size('sessions')::bigint AS sessions`.execute(db);
  const row = rows[0]!;
  const total = row.table + row.indexes + row.sessions;
  const events = Math.max(1, row.events);
  return {
    events: row.events,
    eventsTableBytes: row.table,
    eventsIndexBytes: row.indexes,
    sessionsBytes: row.sessions,
    bytesPerMillionEvents: (total / events) * 1e6,
    rawJsonBytesPerMillionEvents: (rawJsonBytes / events) * 1e6,
    ratioToRawJson: total / Math.max(1, rawJsonBytes),
  };
}

export function describeDiskSize(size: DiskSize): string {
  const mb = (bytes: number) => (bytes / 1024 ** 2).toFixed(0);
  return (
    `${mb(size.bytesPerMillionEvents)} MB per million events ` +
    `(session_events ${mb(size.eventsTableBytes)} MB table + ${mb(size.eventsIndexBytes)} MB indexes, ` +
    `sessions ${mb(size.sessionsBytes)} MB, for ${size.events.toLocaleString('en-US')} events; ` +
    `${size.ratioToRawJson.toFixed(2)}× their ${mb(size.rawJsonBytesPerMillionEvents)} MB of raw JSON per million)`
  );
}

/** {@link DiskSize} of a corpus of small events, with what it was made of. */
export interface SmallEventsDiskSize extends DiskSize {
  meanBodyBytes: number;
}

/**
 * The size on disk of `events` small events (see `SMALL_BODIES`), loaded as the catch-up corpus
 * is (`loadRows`, then `VACUUM ANALYZE`) into a database of their own: the store's fixed cost per
 * event (row header, columns beside the body, index entries) weighs most on small bodies.
 */
export async function smallEventsDiskSize(serverUrl: string, seed: string, events: number): Promise<SmallEventsDiskSize> {
  const scratch = await createScratchDatabase(serverUrl);
  otherLoad.addDatabase(scratch.name);
  try {
    const stats = new CorpusStats();
    const corpus = new InterleavedCorpus({ seed, prefix: 'sm', events, bodyBytes: SMALL_BODIES });
    await loadRows(scratch.url, await probeEventLayout(scratch.db), corpus.rows(), { onRow: (row) => stats.add(row) });
    return { ...(await diskSize(scratch.db, stats.bytes)), meanBodyBytes: stats.bytes / Math.max(1, stats.events) };
  } finally {
    await scratch.drop();
  }
}
