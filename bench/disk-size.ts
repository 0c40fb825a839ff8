import { type Kysely, sql } from 'kysely';
import type { DB } from '../src/db/schema.js';
import { builtInProjections } from '../projections/index.js';
import { Projector } from '../src/projector/projector.js';
import { EventStore } from '../src/store/event-store.js';
import { columnarAvailable, sealEventLog } from '../src/store/seal-event-log.js';
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
  /** The same once `os-audit seal` has moved the log into a columnar partition; absent where the server has no citus_columnar (and in runs before 2026-12-05). */
  sealed?: SealedDiskSize;
}

/** {@link DiskSize} after `os-audit seal`, and the seal's own time. */
export type SealedDiskSize = Omit<DiskSize, 'sealed'> & { sealSeconds: number };

/** `session_events` and, once it is partitioned, its partitions (a table that is not partitioned has no partition tree). */
const eventTables = sql`(SELECT 'session_events'::regclass AS relid UNION SELECT relid FROM pg_partition_tree('session_events')) AS tables`;

/**
 * The sizes of the event store's tables, holding events of `rawJsonBytes` bytes of JSON in all;
 * of each partition of `session_events` where it is partitioned (sealed).
 */
export async function diskSize(db: Kysely<DB>, rawJsonBytes: number): Promise<Omit<DiskSize, 'sealed'>> {
  const { rows } = await sql<{ events: number; table: number; indexes: number; sessions: number }>`
    SELECT (SELECT count(*) FROM session_events)::int AS events,
      (SELECT sum(pg_table_size(relid)) FROM ${eventTables})::bigint AS table,
      (SELECT sum(pg_indexes_size(relid)) FROM ${eventTables})::bigint AS indexes,
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

/**
 * The store's size on disk after `os-audit seal` (the same function, in this process) has
 * sealed what every projection has folded (the projections fold it first, here); undefined
 * where the server has no citus_columnar.
 */
export async function sealedDiskSize(db: Kysely<DB>, rawJsonBytes: number, log: (line: string) => void): Promise<SealedDiskSize | undefined> {
  if (!(await columnarAvailable(db))) {
    log('   not sealed: this server has no citus_columnar (it comes with Citus)');
    return undefined;
  }
  // The corpus is loaded in transactions of 100,000 events. A seal leaves the transaction of the
  // projections' checkpoint in the row store, since a batch reads from it on. One more
  // transaction, folded, puts the whole corpus behind the checkpoint, as a runtime's many small
  // transactions keep it.
  await new EventStore(db).append('bench-seal-marker', [{ kind: 'page_in', turn: 0, entry_count: 0 }]);
  for (const projection of builtInProjections) await new Projector(db, projection).catchUp();
  const started = performance.now();
  const report = await sealEventLog(db);
  const sealSeconds = (performance.now() - started) / 1000;
  const sealed = { ...(await diskSize(db, rawJsonBytes)), sealSeconds };
  log(`   after os-audit seal (${report.sealedEvents.toLocaleString('en-US')} events sealed in ${sealSeconds.toFixed(1)} s): ${describeDiskSize(sealed)}`);
  return sealed;
}

export function describeDiskSize(size: Omit<DiskSize, 'sealed'>): string {
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
 * is (`loadRows`, then `VACUUM ANALYZE`) into a database of their own. The store's fixed cost per
 * event (row header, columns beside the body, index entries) weighs most on small bodies.
 */
export async function smallEventsDiskSize(serverUrl: string, seed: string, events: number, log: (line: string) => void): Promise<SmallEventsDiskSize> {
  const scratch = await createScratchDatabase(serverUrl);
  otherLoad.addDatabase(scratch.name);
  try {
    const stats = new CorpusStats();
    const corpus = new InterleavedCorpus({ seed, prefix: 'sm', events, bodyBytes: SMALL_BODIES });
    await loadRows(scratch.url, await probeEventLayout(scratch.db), corpus.rows(), { onRow: (row) => stats.add(row) });
    const size = await diskSize(scratch.db, stats.bytes);
    log(`   ${events.toLocaleString('en-US')} events of ${(stats.bytes / Math.max(1, stats.events)).toFixed(0)} bytes of JSON on average: ${describeDiskSize(size)}`);
    const sealed = await sealedDiskSize(scratch.db, stats.bytes, log);
    return { ...size, ...(sealed === undefined ? {} : { sealed }), meanBodyBytes: stats.bytes / Math.max(1, stats.events) };
  } finally {
    await scratch.drop();
  }
}
