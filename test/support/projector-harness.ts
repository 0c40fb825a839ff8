import type { Kysely } from 'kysely';
import { osSnapshotProjection } from '../../projections/os-snapshot/os-snapshot-projection.js';
import { foldStoredOsSnapshot, readSqlOsSnapshot } from '../../src/deprecated-os-snapshot.js';
import type { DB } from '../../src/db/schema.js';
import { currentTransactionLimit, horizonHasPassed } from '../../src/projector/horizon.js';
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
    const fold = await foldStoredOsSnapshot(store, sessionId);
    results.push({ sessionId, sql, fold });
  }
  return results;
}

/**
 * Waits until every transaction open now has ended, so that what was committed before the call
 * is below the projector's horizon, whatever other tests on the same server are doing.
 */
export async function waitForHorizon(db: Kysely<DB>, timeoutMs = 30_000): Promise<void> {
  const limit = await currentTransactionLimit(db);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await horizonHasPassed(db, limit)) return;
    if (Date.now() > deadline) throw new Error('an open transaction held the horizon for too long');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
