import { defineProjection, plannedOnceSnapshotView } from '../../src/projection-api.js';
import { evolveOsSnapshotV0260, type OsSnapshotV0260State, osSnapshotV0260State } from './fold-os-snapshot-v0-2-60.js';
import * as tables from './migrations/0001-tables.js';
import * as snapshotView from './migrations/0002-snapshot-view.js';
import * as dashboardViews from './migrations/0003-dashboard-views.js';
import { OS_SNAPSHOT_V0_2_60_COUNTERS, OS_SNAPSHOT_V0_2_60_READS } from './os-snapshot-v0-2-60-reads.js';
import { osSnapshotV0260Json } from './serialize-os-snapshot-v0-2-60.js';
import { osSnapshotV0260FoldStatements } from './sql/apply-os-snapshot-v0-2-60-events.js';

/**
 * The runtime's OS audit snapshot at v0.2.60 (its Rust core's `rebuild_os_snapshot_from_events`)
 * as SQL tables `os_v0_2_60_*`, read together through the view `os_snapshot_v0_2_60_json`: the
 * seed's snapshot plus budget usage, cancellations, and signals with their operation and delivery.
 * A projection beside `os_snapshot`, with tables, checkpoint and stopped sessions of its own.
 *
 * @example
 * ```ts
 * await new Projector(db, osSnapshotV0260Projection).catchUp(); // as `os-audit project --once --projection os_snapshot_v0_2_60`
 * const { state } = foldEvents(osSnapshotV0260Projection, events); // the in-memory fold `verify` compares with
 * osSnapshotV0260Projection.toJson(state); // equals the view's `snapshot`
 * ```
 */
export const osSnapshotV0260Projection = defineProjection<OsSnapshotV0260State>({
  name: 'os_snapshot_v0_2_60',
  version: 1,
  description: "the runtime's OS audit snapshot at v0.2.60 (budget usage, cancellations, signal deliveries)",
  migrations: {
    '0001-tables': tables,
    '0002-snapshot-view': snapshotView,
    '0003-dashboard-views': dashboardViews,
    '0004-snapshot-json-planned-once': plannedOnceSnapshotView({ view: 'os_snapshot_v0_2_60_json', heads: 'os_v0_2_60_snapshots', json: snapshotView.osSnapshotV0260JsonSql }),
  },
  sessionHeads: 'os_v0_2_60_snapshots',
  tables: [
    'os_v0_2_60_signals',
    'os_v0_2_60_cancellations',
    'os_v0_2_60_budget_usage',
    'os_v0_2_60_budget_exceeded',
    'os_v0_2_60_processes',
    'os_v0_2_60_snapshots',
  ],
  views: ['os_snapshot_v0_2_60_json', 'os_v0_2_60_operations', 'os_v0_2_60_signal_dispositions'],
  snapshotView: 'os_snapshot_v0_2_60_json',
  reads: OS_SNAPSHOT_V0_2_60_READS,
  counters: OS_SNAPSHOT_V0_2_60_COUNTERS,
  foldStatements: osSnapshotV0260FoldStatements,
  init: osSnapshotV0260State,
  evolve: evolveOsSnapshotV0260,
  toJson: (state) => osSnapshotV0260Json(state.snapshot),
});
