import { defineProjection, type JsonObject, plannedOnceSnapshotView } from '../../src/projection-api.js';
import { evolveOsSnapshot, type OsSnapshotState, osSnapshotState } from './fold-os-snapshot.js';
import * as tables from './migrations/0000-tables.js';
import { OS_SNAPSHOT_COUNTERS, OS_SNAPSHOT_READS } from './os-snapshot-reads.js';
import { canonicalOsSnapshot } from './serialize-os-snapshot.js';
import { osSnapshotFoldStatements } from './sql/apply-os-snapshot-events.js';

/**
 * The OS audit snapshot of the spec (`shared/spec/session-events.md`, section 3; the seed's
 * fold) as SQL tables: `os_snapshots`, `os_processes`, `os_signals`, `os_budget_exceeded`, read
 * together through the view `os_snapshot_json`, and the dashboard views over them.
 *
 * Its tables and views came before projections had migrations of their own. The engine's
 * migrations 0002, 0004, 0005 and 0007 of earlier os-audit versions made them, and a database
 * they migrated keeps them. `0000-tables` makes them, as they are now, everywhere else.
 *
 * @example
 * ```ts
 * await new Projector(db, osSnapshotProjection).catchUp(); // as `os-audit project --once`
 * await rebuildProjection(db, osSnapshotProjection); // as `os-audit rebuild --projection os_snapshot`
 * ```
 */
export const osSnapshotProjection = defineProjection<OsSnapshotState>({
  name: 'os_snapshot',
  version: 1,
  description: "the OS audit snapshot of the spec (the seed's fold)",
  migrations: {
    '0000-tables': tables,
    '0001-snapshot-json-planned-once': plannedOnceSnapshotView({ view: 'os_snapshot_json', heads: 'os_snapshots', json: tables.osSnapshotJsonSql }),
  },
  sessionHeads: 'os_snapshots',
  tables: ['os_signals', 'os_budget_exceeded', 'os_processes', 'os_snapshots'],
  views: [
    'os_snapshot_json',
    'os_session_overview',
    'os_process_states',
    'os_processes_by_state',
    'os_suspended_sessions',
    'os_signal_dispositions',
    'os_budget_events',
  ],
  snapshotView: 'os_snapshot_json',
  reads: OS_SNAPSHOT_READS,
  counters: OS_SNAPSHOT_COUNTERS,
  foldStatements: osSnapshotFoldStatements,
  init: () => osSnapshotState(),
  evolve: evolveOsSnapshot,
  // An interface has no index signature: the snapshot is JSON all the same.
  toJson: (state) => canonicalOsSnapshot(state.snapshot) as unknown as JsonObject,
});
