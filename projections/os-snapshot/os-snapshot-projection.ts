import type { Projection } from '../../src/projector/projection.js';
import { clearOsSnapshotSql, OS_SNAPSHOT_SESSION_AGGREGATES, osSnapshotFoldSql, RECORD_KINDS } from './sql/apply-os-snapshot-events.js';
import { OS_SNAPSHOT_PROJECTION } from './stored-os-snapshot.js';

/**
 * The OS audit snapshot as SQL tables (`os_snapshots`, `os_processes`, `os_signals`,
 * `os_budget_exceeded`, read together through the view `os_snapshot_json`).
 */
export const osSnapshotProjection: Projection = {
  name: OS_SNAPSHOT_PROJECTION,
  sessionHeads: 'os_snapshots',
  readsPayloadOf: RECORD_KINDS,
  problemFunction: 'os_snapshot_event_problem',
  sessionAggregates: OS_SNAPSHOT_SESSION_AGGREGATES,
  foldSql: osSnapshotFoldSql,
  async clear(db) {
    for (const statement of clearOsSnapshotSql()) await statement.execute(db);
  },
};
