/**
 * The OS audit snapshot of a session (`shared/spec/session-events.md`, section 3): its
 * types, the reference fold over a session's events, and its canonical JSON.
 *
 * Pure: no I/O.
 *
 * @module
 */
export {
  emptyOsSnapshot,
  OS_SNAPSHOT_COUNTER_NAMES,
  osSnapshotCounts,
  type BudgetExceededRecord,
  type OsSnapshot,
  type OsSnapshotCounter,
  type OsSnapshotCounts,
  type ProcessRecord,
  type SignalRecord,
  type SuspendRecord,
} from './os-snapshot.js';
export { foldOsSnapshot } from './fold-os-snapshot.js';
export {
  BUDGET_EXCEEDED_RECORD_KEYS,
  canonicalOsSnapshot,
  OS_SNAPSHOT_KEYS,
  PROCESS_RECORD_KEYS,
  SIGNAL_RECORD_KEYS,
  SUSPEND_RECORD_KEYS,
} from './serialize-os-snapshot.js';

// For projections that build on this one (os_snapshot_v0_2_60): its fold, reads and SQL parts.
export { evolveOsSnapshot } from './fold-os-snapshot.js';
export { OS_SNAPSHOT_COUNTERS, OS_SNAPSHOT_READS } from './os-snapshot-reads.js';
export { processRowsSql } from './sql/process-rows-sql.js';
export { snapshotHeadsSql } from './sql/snapshot-heads-sql.js';
