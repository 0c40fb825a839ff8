/**
 * The v0.2.60 Node SDK's own OS snapshot fold (`rebuildOsSnapshotFromSessionEvents` of its
 * `node/src/runtime/os-snapshot.ts`), loaded from its source, and its snapshot written as the
 * Rust fold's JSON, so that it can be compared with `osSnapshotV0260Projection.toJson`.
 *
 * @module
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { JsonObject } from '../../src/json/json-value.js';

/** The v0.2.60 SDK's `OsSnapshot`, camelCase, absent values left out, as its fold returns it. */
export interface SdkV0260OsSnapshot {
  lastSuspend?: { turn: number; reason: string; pending_calls: string[] };
  lastResumedTurn?: number;
  processByAgent: Array<{ turn: number; agent_id: string; parent_task_id?: string; parent_session_id?: string; state: string }>;
  budgetExceeded: Array<{ turn: number; operation_id: string; reservation_id?: string; budget: string }>;
  budgetUsageReported: Array<{ turn: number; operation_id: string; reservation_id: string; tokens: number; subagents: number; rounds: number }>;
  cancellations: Array<{ turn: number; operation_id: string; reason: string; pending_call_ids: string[] }>;
  signals: Array<{ turn: number; operation_id: string; delivery_id: string; attempt: number; signal_id: string; disposition: string; queue_depth: number }>;
  pageOutCount: number;
  pageInCount: number;
  toolGatedCount: number;
  memoryWrittenCount: number;
  memoryQueriedCount: number;
  memoryValidationFailedCount: number;
  memoryRetrievalResultCount: number;
}

/** The SDK's fold: events as the SDK reads a log (`JSON.parse` of each). */
export type SdkV0260Fold = (events: unknown[]) => SdkV0260OsSnapshot;

/**
 * The SDK's fold from its `os-snapshot.ts` (which imports only `kernel-event-log.ts` beside it):
 * a prepared SDK's (`.sdk/0.2.60/node/src/runtime/os-snapshot.ts`) or one extracted from the tarball.
 *
 * @example
 * ```ts
 * const rebuild = await loadSdkV0260Fold(path.join(sdkCopy('0.2.60').nodeDir, 'src', 'runtime', 'os-snapshot.ts'));
 * ```
 */
export async function loadSdkV0260Fold(source: string): Promise<SdkV0260Fold> {
  const module = (await import(pathToFileURL(source).href)) as { rebuildOsSnapshotFromSessionEvents: SdkV0260Fold };
  return module.rebuildOsSnapshotFromSessionEvents;
}

/** The repository, where `.sdk/` and the shared folder beside it are looked for. */
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The SDK tarball, found as `scripts/sdk/prepare-sdk.sh` finds it: in `OS_AUDIT_SHARED_DIR`, in
 * the team's shared folder beside the repository, or beside the one a clone was made from.
 */
function sdkTarball(): string | undefined {
  let origin: string | undefined;
  try {
    origin = execFileSync('git', ['-C', repoRoot, 'remote', 'get-url', 'origin'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    origin = undefined;
  }
  const folders = [process.env.OS_AUDIT_SHARED_DIR, path.join(repoRoot, '..', 'shared'), origin && path.join(origin, '..', 'shared')];
  return folders
    .filter((folder): folder is string => typeof folder === 'string' && folder !== '')
    .map((folder) => path.join(folder, 'deepstrike-sdk', 'deepstrike-node-v0.2.60.tar.gz'))
    .find((file) => existsSync(file));
}

/**
 * The SDK's fold: from the SDK prepared in `.sdk/0.2.60` (as `.ci/run` prepares it), else its two
 * files extracted from the tarball (no install, no build: a few milliseconds); `undefined` when
 * neither is there.
 *
 * @example
 * ```ts
 * const rebuild = await extractSdkV0260Fold();
 * if (rebuild) sdkV0260SnapshotAsJson(rebuild(events));
 * ```
 */
export async function extractSdkV0260Fold(): Promise<SdkV0260Fold | undefined> {
  const prepared = path.join(repoRoot, '.sdk', '0.2.60', 'node', 'src', 'runtime', 'os-snapshot.ts');
  if (existsSync(prepared)) return loadSdkV0260Fold(prepared);
  const tarball = sdkTarball();
  if (tarball === undefined) return undefined;
  const dir = mkdtempSync(path.join(tmpdir(), 'os-audit-sdk-fold-'));
  try {
    const runtime = 'deepstrike-v0.2.60/node/src/runtime';
    execFileSync('tar', ['-xzf', tarball, '-C', dir, `${runtime}/os-snapshot.ts`, `${runtime}/kernel-event-log.ts`]);
    return await loadSdkV0260Fold(path.join(dir, runtime, 'os-snapshot.ts'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The SDK's snapshot as the Rust fold's JSON, the mapping spelled out:
 *
 * - `lastSuspend` → `last_suspend`, `lastResumedTurn` → `last_resumed_turn`: `null` when absent;
 * - `processByAgent` → `process_by_agent`: each record's `parent_session_id` `null` when absent,
 *   its `parent_task_id` left out (the Rust record has none);
 * - `budgetExceeded` → `budget_exceeded`: each record's `reservation_id` `null` when absent;
 * - `budgetUsageReported` → `budget_usage_reported`, `cancellations`, `signals`: as they are;
 * - `pageOutCount` → `page_out_count`, and so on for the seven counters.
 *
 * Records passed as they are keep the SDK's key order (and leave out what it leaves
 * `undefined`), so a comparison of JSON text proves those too.
 *
 * @example
 * ```ts
 * stringifyJson(sdkV0260SnapshotAsJson(rebuild(events))) === stringifyJson(osSnapshotV0260Projection.toJson(state));
 * ```
 */
export function sdkV0260SnapshotAsJson(sdk: SdkV0260OsSnapshot): JsonObject {
  const json = {
    last_suspend: sdk.lastSuspend ?? null,
    last_resumed_turn: sdk.lastResumedTurn ?? null,
    process_by_agent: sdk.processByAgent.map(({ turn, agent_id, parent_session_id, state }) => ({ turn, agent_id, parent_session_id: parent_session_id ?? null, state })),
    budget_exceeded: sdk.budgetExceeded.map(({ turn, operation_id, reservation_id, budget }) => ({ turn, operation_id, reservation_id: reservation_id ?? null, budget })),
    budget_usage_reported: sdk.budgetUsageReported,
    cancellations: sdk.cancellations,
    signals: sdk.signals,
    page_out_count: sdk.pageOutCount,
    page_in_count: sdk.pageInCount,
    tool_gated_count: sdk.toolGatedCount,
    memory_written_count: sdk.memoryWrittenCount,
    memory_queried_count: sdk.memoryQueriedCount,
    memory_validation_failed_count: sdk.memoryValidationFailedCount,
    memory_retrieval_result_count: sdk.memoryRetrievalResultCount,
  };
  return json as unknown as JsonObject;
}
