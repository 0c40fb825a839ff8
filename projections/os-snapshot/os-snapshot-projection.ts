import type { Projection } from '../../src/projector/projection.js';
import { OS_SNAPSHOT_COUNTERS, OS_SNAPSHOT_READS } from './os-snapshot-reads.js';
import { clearOsSnapshotSql, osSnapshotFoldSql } from './sql/apply-os-snapshot-events.js';
import { OS_SNAPSHOT_PROJECTION } from './stored-os-snapshot.js';

/**
 * The OS audit snapshot as SQL tables (`os_snapshots`, `os_processes`, `os_signals`,
 * `os_budget_exceeded`, read together through the view `os_snapshot_json`).
 *
 * @example
 * ```ts
 * await new Projector(db, osSnapshotProjection).catchUp(); // as `os-audit project --once`
 * await rebuildProjection(db, osSnapshotProjection); // as `os-audit rebuild`
 * ```
 */
export const osSnapshotProjection: Projection = {
  name: OS_SNAPSHOT_PROJECTION,
  sessionHeads: 'os_snapshots',
  reads: OS_SNAPSHOT_READS,
  counters: OS_SNAPSHOT_COUNTERS,
  foldSql: osSnapshotFoldSql,
  async clear(db) {
    for (const statement of clearOsSnapshotSql()) await statement.execute(db);
  },
};
