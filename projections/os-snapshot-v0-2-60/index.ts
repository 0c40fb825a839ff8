/**
 * The runtime's OS audit snapshot at v0.2.60 as a projection: its types, reads, fold and JSON.
 *
 * @module
 */
export {
  emptyOsSnapshotV0260,
  type BudgetExceededRecord,
  type BudgetUsageRecord,
  type CancellationRecord,
  type OsSnapshotV0260,
  type ProcessRecord,
  type SignalDeliveryDisposedRecord,
  type SuspendRecord,
} from './os-snapshot-v0-2-60.js';
export { OS_SNAPSHOT_V0_2_60_COUNTERS, OS_SNAPSHOT_V0_2_60_READS } from './os-snapshot-v0-2-60-reads.js';
export { evolveOsSnapshotV0260, type OsSnapshotV0260State, osSnapshotV0260State } from './fold-os-snapshot-v0-2-60.js';
export { osSnapshotV0260Json } from './serialize-os-snapshot-v0-2-60.js';
export { osSnapshotV0260Projection } from './os-snapshot-v0-2-60-projection.js';
