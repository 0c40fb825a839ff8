/**
 * What the runner proves about a database the SDK wrote to. Every append is stored exactly, and
 * the projector's SQL snapshots are verified against the spec's fold. Each session's snapshot
 * equals the seed SDK's own `rebuildOsSnapshotFromSessionEvents` of the stored events. Its
 * runtime's v0.2.60 snapshot (`os_snapshot_v0_2_60`) equals the v0.2.60 SDK's.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { type Kysely, sql } from 'kysely';
import type { DB } from '../../src/db/schema.js';
import { stringifyJson } from '../../src/json/stringify-json.js';
import { EventStore } from '../../src/store/event-store.js';
import { Projector } from '../../src/projector/projector.js';
import { osSnapshotProjection } from '../../projections/os-snapshot/os-snapshot-projection.js';
import { readSqlOsSnapshot, verifyOsSnapshots } from '../../src/deprecated-os-snapshot.js';
import type { OsSnapshot } from '../../projections/os-snapshot/os-snapshot.js';
import { osSnapshotV0260Projection } from '../../projections/os-snapshot-v0-2-60/index.js';
import { loadSdkV0260Fold, type SdkV0260Fold, sdkV0260SnapshotAsJson } from '../../test/support/v0-2-60-sdk-fold.js';
import { foldedV0260Session, sqlV0260Session } from '../../test/support/v0-2-60-stored-session.js';
import type { RecordedAppend } from './jest/postgres-logs.js';
import { sdkCopy } from './sdk-jest.js';

// ---------------------------------------------------------------------------------------------
// Every append stored exactly

export interface StoredAppendsReport {
  appends: number;
  sessions: number;
  /** Appends whose event is stored at their seq as the very text handed over. */
  storedExactly: number;
  /** Appends the log refused (the SDK's own logs refuse none). */
  refused: RecordedAppend[];
  /** Appends not stored as recorded, and events stored that no append recorded. */
  differences: string[];
}

/** The appends the jest workers recorded (postgres-logs.ts), by session, in seq order. */
function readRecordedAppends(recordDir: string): RecordedAppend[] {
  return readdirSync(recordDir)
    .filter((file) => file.endsWith('.jsonl'))
    .flatMap((file) =>
      readFileSync(path.join(recordDir, file), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as RecordedAppend),
    );
}

/** Compares every recorded append with the stored event at its seq, text for text, and the other way round. */
export async function checkRecordedAppends(db: Kysely<DB>, recordDir: string): Promise<StoredAppendsReport> {
  const appends = readRecordedAppends(recordDir);
  const refused = appends.filter((append) => append.error !== undefined);
  const bySession = new Map<string, Map<number, string | undefined>>();
  for (const append of appends) {
    if (append.seq === undefined) continue;
    const session = bySession.get(append.session) ?? new Map<number, string | undefined>();
    session.set(append.seq, append.text);
    bySession.set(append.session, session);
  }
  const store = new EventStore(db);
  const differences: string[] = [];
  let storedExactly = 0;
  for (const [sessionId, recorded] of bySession) {
    const stored = new Map<number, string>();
    for await (const event of store.readSessionText(sessionId)) stored.set(event.seq, event.text);
    for (const [seq, text] of recorded) {
      if (stored.get(seq) === text) storedExactly += 1;
      else differences.push(`${sessionId} seq ${seq}: stored ${stored.get(seq) ?? 'nothing'}, appended ${text}`);
    }
    for (const seq of stored.keys()) if (!recorded.has(seq)) differences.push(`${sessionId} seq ${seq}: stored, but no append recorded it`);
  }
  const storedSessions = await db.selectFrom('sessions').select('session_id').execute();
  for (const { session_id } of storedSessions) {
    if (!bySession.has(session_id)) differences.push(`${session_id}: stored, but no append recorded it`);
  }
  return { appends: appends.length, sessions: bySession.size, storedExactly, refused, differences };
}

// ---------------------------------------------------------------------------------------------
// The projector, and verify --all

export interface ProjectionReport {
  eventsProjected: number;
  verified: number;
  mismatches: string[];
  pending: number;
}

/** Folds every stored event (`project --once`), then proves every SQL snapshot (`verify --all`). */
export async function projectAndVerify(db: Kysely<DB>): Promise<ProjectionReport> {
  const caughtUp = await new Projector(db, osSnapshotProjection).catchUp();
  const verified = await verifyOsSnapshots(db, { all: true });
  return {
    eventsProjected: caughtUp.eventsApplied,
    verified: verified.checked,
    mismatches: verified.mismatches.map((mismatch) => `${mismatch.sessionId}: ${mismatch.differences.join('; ')}`),
    pending: verified.pending.length,
  };
}

// ---------------------------------------------------------------------------------------------
// The seed SDK's own fold

/** The seed SDK's (0.2.36) `OsSnapshot`, camelCase, as its `rebuildOsSnapshotFromSessionEvents` returns it. */
interface SeedOsSnapshot {
  lastSuspend?: { turn: number; reason: string; pending_calls: string[] };
  lastResumedTurn?: number;
  processByAgent: Array<{ turn: number; agent_id: string; parent_session_id?: string; state: string }>;
  budgetExceeded: Array<{ turn: number; budget: string }>;
  signals: Array<{ turn: number; signal_id: string; disposition: string; queue_depth: number }>;
  pageOutCount: number;
  pageInCount: number;
  spoolCount: number;
  toolGatedCount: number;
  memoryWrittenCount: number;
  memoryQueriedCount: number;
  memoryValidationFailedCount: number;
  memoryRetrievalResultCount: number;
}

export type SeedRebuild = (events: unknown[]) => OsSnapshot;

/**
 * The seed SDK's `rebuildOsSnapshotFromSessionEvents` (from .sdk/0.2.36, its TypeScript source),
 * giving the spec's snapshot: its fields renamed to the spec's, absent ones `null`, and
 * `spoolCount`, which the spec does not have, dropped.
 */
export async function loadSeedRebuild(): Promise<SeedRebuild> {
  const source = path.join(sdkCopy('0.2.36').nodeDir, 'src', 'runtime', 'os-snapshot.ts');
  const seed = (await import(pathToFileURL(source).href)) as { rebuildOsSnapshotFromSessionEvents: (events: unknown[]) => SeedOsSnapshot };
  return (events) => asSpecSnapshot(seed.rebuildOsSnapshotFromSessionEvents(events));
}

function asSpecSnapshot(seed: SeedOsSnapshot): OsSnapshot {
  return {
    last_suspend: seed.lastSuspend ?? null,
    last_resumed_turn: seed.lastResumedTurn ?? null,
    process_by_agent: seed.processByAgent.map((process) => ({
      turn: process.turn,
      agent_id: process.agent_id,
      parent_session_id: process.parent_session_id ?? null,
      state: process.state,
    })),
    budget_exceeded: seed.budgetExceeded,
    signals: seed.signals,
    page_out_count: seed.pageOutCount,
    page_in_count: seed.pageInCount,
    tool_gated_count: seed.toolGatedCount,
    memory_written_count: seed.memoryWrittenCount,
    memory_queried_count: seed.memoryQueriedCount,
    memory_validation_failed_count: seed.memoryValidationFailedCount,
    memory_retrieval_result_count: seed.memoryRetrievalResultCount,
  };
}

export interface SeedComparisonReport {
  /** Sessions whose snapshot folds the whole log, equal to the SDK's rebuild of it. */
  equalWhole: number;
  /** Sessions stopped at an event the snapshot cannot read, equal to the SDK's rebuild of the events before it. */
  equalPrefix: number;
  /** Where each stopped session stopped, and why. */
  stops: string[];
  differences: string[];
}

/**
 * Compares each stored session's SQL snapshot with the seed's rebuild of its stored events (as
 * the SDK reads them back: `JSON.parse` of each). A session the projector stopped is compared on
 * the events before the stop. The seed's fold has no notion of an unreadable event (it folds a
 * missing `turn` as `undefined`), so past that point the two cannot be asked the same question.
 */
export async function compareWithSeed(db: Kysely<DB>, rebuild: SeedRebuild): Promise<SeedComparisonReport> {
  const store = new EventStore(db);
  const report: SeedComparisonReport = { equalWhole: 0, equalPrefix: 0, stops: [], differences: [] };
  const sessions = await db.selectFrom('sessions').select('session_id').orderBy('session_id').execute();
  for (const { session_id: sessionId } of sessions) {
    const sql = await readSqlOsSnapshot(db, sessionId);
    if (sql === undefined) {
      report.differences.push(`${sessionId}: no SQL snapshot`);
      continue;
    }
    const events: unknown[] = [];
    for await (const stored of store.readSessionText(sessionId)) {
      if (stored.seq > sql.lastSeq) break;
      events.push(JSON.parse(stored.text));
    }
    const seed = rebuild(events);
    if (!isDeepStrictEqual(toPlain(sql.snapshot), seed)) {
      report.differences.push(`${sessionId} (through seq ${sql.lastSeq}): sql ${JSON.stringify(sql.snapshot)}, seed ${JSON.stringify(seed)}`);
    } else if (sql.stopped === null) {
      report.equalWhole += 1;
    } else {
      report.equalPrefix += 1;
      report.stops.push(`${sessionId} stopped at seq ${sql.stopped.seq} (${sql.stopped.kind}): ${sql.stopped.problem}`);
    }
  }
  return report;
}

/** The snapshot as plain JSON values (a read snapshot may share frozen parts). */
function toPlain(snapshot: OsSnapshot): unknown {
  return JSON.parse(JSON.stringify(snapshot));
}

// ---------------------------------------------------------------------------------------------
// The runtime's v0.2.60 snapshot and the v0.2.60 SDK's own fold

/**
 * The v0.2.60 SDK's `rebuildOsSnapshotFromSessionEvents` (from .sdk/0.2.60, its TypeScript source).
 *
 * @example
 * ```ts
 * const report = await compareV0260WithSdk(db, await loadV0260Rebuild());
 * ```
 */
export function loadV0260Rebuild(): Promise<SdkV0260Fold> {
  return loadSdkV0260Fold(path.join(sdkCopy('0.2.60').nodeDir, 'src', 'runtime', 'os-snapshot.ts'));
}

/**
 * Folds every stored event into `os_snapshot_v0_2_60` with a projector. Then it compares each
 * session's SQL snapshot with the in-memory fold of its stored log, where it stops and why
 * included, as `verify` would. It also compares it with the v0.2.60 SDK's rebuild of its stored
 * events (as the SDK reads them back: `JSON.parse` of each), written as the Rust fold's JSON
 * (`sdkV0260SnapshotAsJson`). A stopped session is compared with the SDK on the events before
 * the stop, as with the seed.
 *
 * @example
 * ```ts
 * const { equalWhole, differences, rows } = await compareV0260WithSdk(database.db, await loadV0260Rebuild());
 * ```
 */
export async function compareV0260WithSdk(db: Kysely<DB>, rebuild: SdkV0260Fold): Promise<SeedComparisonReport & { eventsProjected: number; rows: string }> {
  const caughtUp = await new Projector(db, osSnapshotV0260Projection).catchUp();
  const store = new EventStore(db);
  const report = { eventsProjected: caughtUp.eventsApplied, rows: await rowCounts(db), equalWhole: 0, equalPrefix: 0, stops: [] as string[], differences: [] as string[] };
  const sessions = await db.selectFrom('sessions').select('session_id').orderBy('session_id').execute();
  for (const { session_id: sessionId } of sessions) {
    const stored = await sqlV0260Session(db, sessionId);
    const folded = await foldedV0260Session(db, sessionId);
    if (!isDeepStrictEqual(stored, folded)) {
      report.differences.push(`${sessionId}: sql ${JSON.stringify(stored)}, in-memory fold ${JSON.stringify(folded)}`);
      continue;
    }
    const events: unknown[] = [];
    for await (const event of store.readSessionText(sessionId)) {
      if (event.seq > stored.lastSeq!) break;
      events.push(JSON.parse(event.text));
    }
    const sdk = stringifyJson(sdkV0260SnapshotAsJson(rebuild(events)));
    if (sdk !== stored.snapshot) {
      report.differences.push(`${sessionId} (through seq ${stored.lastSeq}): sql ${stored.snapshot}, v0.2.60 SDK ${sdk}`);
    } else if (stored.stoppedAt === null) {
      report.equalWhole += 1;
    } else {
      report.equalPrefix += 1;
      report.stops.push(`${sessionId} stopped at seq ${stored.stoppedAt.index}: ${stored.stoppedAt.problem}`);
    }
  }
  return report;
}

/** How many rows each of the projection's tables but its heads holds, said in words: what the comparison met. */
async function rowCounts(db: Kysely<DB>): Promise<string> {
  const tables = osSnapshotV0260Projection.tables.filter((table) => table !== osSnapshotV0260Projection.sessionHeads);
  const counts = await Promise.all(
    tables.map(async (table) => `${(await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(table)}`.execute(db)).rows[0]!.n} ${table}`),
  );
  return counts.join(', ');
}
