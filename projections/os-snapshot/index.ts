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
