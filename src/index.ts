/**
 * os-audit: agent-OS session logs in PostgreSQL, and each session's OS audit snapshot kept in
 * SQL tables. This is the package's public API (`import … from 'os-audit'`); the CLI
 * (`os-audit`) is built on it.
 *
 * @example
 * ```ts
 * import { foldOsSnapshot, migrateToLatest, PostgresSessionLog } from 'os-audit';
 *
 * // values: 'exact' reads events as the SQL projection and `verify` do (`3.0` is no u32 there,
 * // where JSON.parse would give 3), so that the fold below is the one they compute.
 * const log = PostgresSessionLog.connect({ connectionString: process.env.DATABASE_URL!, values: 'exact' });
 * await migrateToLatest(log.db);
 * await log.append('session-1', { kind: 'suspended', turn: 3, reason: 'ask_user', pending_calls: ['c1'] });
 * const entries = await log.read('session-1');
 * console.log(foldOsSnapshot(entries.map(({ event }) => event)).last_suspend); // { turn: 3, reason: 'ask_user', pending_calls: ['c1'] }
 * await log.close();
 * ```
 *
 * @module
 */

// The runtime's session log and kernel journal, in PostgreSQL.
export {
  KERNEL_PRIMITIVES_V0_2_36,
  KERNEL_PRIMITIVES_V0_2_60,
  type KernelPrimitiveKinds,
  PostgresSessionLog,
  type PostgresSessionLogOptions,
} from './session-log/postgres-session-log.js';
export type { KernelPrimitive, SessionLog, SessionLogEntry, SessionLogEvent } from './session-log/session-log.js';
export {
  type CheckpointCandidate,
  type InstalledCheckpoint,
  JournalCasConflictError,
  type JournalAppendReceipt,
  type JournalEntry,
  type JournalErrorClasses,
  type JournalHead,
  JournalIntegrityError,
  JournalIoError,
  type JournalPruneReceipt,
  type JournalRecordInput,
  MAX_CHAIN_POSITION,
  PostgresKernelJournal,
} from './session-log/postgres-kernel-journal.js';

// The database.
export { type DatabaseOptions, openDatabase } from './db/open-database.js';
export { ConnectionLostError, isConnectionLoss } from './db/connection-loss.js';
export { DiskFullError, isDiskFull } from './db/disk-full.js';
export { type ConnectionRetry, DEFAULT_CONNECTION_RETRY, retryOnConnectionLoss } from './db/retry-on-connection-loss.js';
export { MigrationError } from './db/migrate.js';
export { type MigrateOptions, migrateToLatest } from './migrate-to-latest.js';
export type { DB } from './db/schema.js';

// The event store.
export { type AppendOptions, EventStore, type EventStoreOptions } from './store/event-store.js';
export type { ReadSessionOptions, StoredEvent, StoredEventText } from './stored-log/stored-event.js';
export { type EncodedEvent, type EncodeOptions, encodeEventText, encodeEventValue, encodeSdkEvent } from './events/encode-event.js';
export { ConcurrencyError } from './store/concurrency-error.js';
export { DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_SESSION_ID_BYTES, type Limits } from './events/limits.js';
export { type EventOrigin, InvalidEventError } from './events/invalid-event-error.js';
export { CorruptEventError } from './stored-log/corrupt-event-error.js';
export { type EventLogLayout } from './store/sql/seal-sql.js';
export { readEventLogLayout, type SealOptions, type SealReport, sealEventLog } from './store/seal-event-log.js';

// The runtime's own log folder, checked against the database (`os-audit verify --against DIR`).
export {
  type FolderDifference,
  type FolderDifferenceKind,
  type FolderVerifyReport,
  verifyAgainstFolder,
  type VerifyFolderOptions,
} from './verify/verify-against-folder.js';

// Events and their contract.
export type { KnownEventKind, KnownSessionEvent, SessionEvent, U32, U64 } from './events/session-event.js';
export { EventValidationError, type ValidateEventOptions, type ValidationIssue, validateEvent } from './events/validate-event.js';

// Lossless JSON: how events are typed, read and written.
export { JsonParseError, type JsonParseErrorCode, parseJson } from './json/parse-json.js';
export { stringifyJson } from './json/stringify-json.js';

// The projector.
export { type CatchUpReport, Projector, type ProjectorEvent, type ProjectorOptions } from './projector/projector.js';
// Writing a projection (src/projection-api.ts: the one face for projection authors), and testing one.
export * from './projection-api.js';
export { type ExpectedSnapshots, ProjectionSpec, ProjectionSpecRun, type SessionEvents, type ThenOptions } from './testing/projection-spec.js';
export { eventBatchOf, foldWholeLogSql } from './projector/projection.js';
export { type FoldedLog, foldStoredLog, type FoldLogOptions, readStoredSnapshot, type SessionStop, type StoredSnapshot } from './projector/stored-snapshot.js';
export { type CorruptLog, type SnapshotMismatch, type VerifyReport, type VerifySelection, verifyProjection } from './projector/verify-projection.js';
export { type StoredLogReader, storedLogReader } from './stored-log/read-session.js';
export type { BatchResult } from './projector/batch-result.js';
export type { StoppedSession } from './projector/sql/batch-sql.js';
export type { Checkpoint } from './projector/checkpoint.js';
export { CheckpointMovedError } from './projector/checkpoint-moved-error.js';
export { LeaseLostError } from './projector/lease.js';
export { type BlockedSession, type HorizonHolder, type ProjectionHalt, projectionHalt, type ProjectionStatus, readProjectionStatus } from './projector/projection-status.js';
export { rebuildProjection, type RebuildOptions, type RebuildReport } from './projector/rebuild-projection.js';

// The OS audit snapshot: the reference fold, its SQL projection and its JSON.
export {
  type BudgetExceededRecord,
  canonicalOsSnapshot,
  emptyOsSnapshot,
  foldOsSnapshot,
  type OsSnapshot,
  type ProcessRecord,
  type SignalRecord,
  type SuspendRecord,
} from '../projections/os-snapshot/index.js';
export { osSnapshotProjection } from '../projections/os-snapshot/os-snapshot-projection.js';
// Its API from before projections were plug-ins, deprecated: the general one with `osSnapshotProjection` replaces it.
export {
  type FoldedSnapshot,
  foldStoredOsSnapshot,
  OS_SNAPSHOT_PROJECTION,
  parseOsSnapshot,
  readSqlOsSnapshot,
  type SerializeOsSnapshotOptions,
  serializeOsSnapshot,
  verifyOsSnapshots,
} from './deprecated-os-snapshot.js';
// Every projection os-audit ships, in the order the CLI runs them.
export { builtInProjections } from '../projections/index.js';
