import { type Kysely, sql } from 'kysely';
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

/**
 * Waits until every transaction open now has ended, so that what was committed before the call
 * is below the projector's horizon, whatever other tests on the same server are doing.
 */
export async function waitForHorizon(db: Kysely<DB>, timeoutMs = 30_000): Promise<void> {
  const { rows } = await sql<{ limit: string }>`SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS limit`.execute(db);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows: passed } = await sql<{ ok: boolean }>`SELECT pg_snapshot_xmin(pg_current_snapshot()) >= ${rows[0]!.limit}::xid8 AS ok`.execute(db);
    if (passed[0]!.ok) return;
    if (Date.now() > deadline) throw new Error('an open transaction held the horizon for too long');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
