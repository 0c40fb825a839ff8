import type { Kysely } from 'kysely';
import { osSnapshotProjection } from '../../projections/os-snapshot/os-snapshot-projection.js';
import { foldStoredLog, readSqlOsSnapshot } from '../../projections/os-snapshot/stored-os-snapshot.js';
import type { DB } from '../../src/db/schema.js';
import { Projector, type ProjectorOptions } from '../../src/projector/projector.js';
import { EventStore } from '../../src/store/event-store.js';

/** A projector of the OS snapshot with test-friendly timings. */
export function osSnapshotProjector(db: Kysely<DB>, options: ProjectorOptions = {}): Projector {
  return new Projector(db, osSnapshotProjection, { pollIntervalMs: 50, leaseTtlMs: 2000, ...options });
}

/** Each session's SQL snapshot next to the in-memory fold of its stored log. */
export async function compareWithFold(db: Kysely<DB>, sessionIds: Iterable<string>) {
  const store = new EventStore(db);
  const results = [];
  for (const sessionId of sessionIds) {
    const sql = await readSqlOsSnapshot(db, sessionId);
    const fold = await foldStoredLog(store, sessionId);
    results.push({ sessionId, sql, fold });
  }
  return results;
}
