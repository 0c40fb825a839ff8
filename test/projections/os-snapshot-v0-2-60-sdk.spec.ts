import { readdirSync, readFileSync } from 'node:fs';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { osSnapshotV0260Projection } from '../../projections/os-snapshot-v0-2-60/index.js';
import type { JsonObject, JsonValue } from '../../src/json/json-value.js';
import { parseJson } from '../../src/json/parse-json.js';
import { stringifyJson } from '../../src/json/stringify-json.js';
import { foldEvents } from '../../src/projector/fold-events.js';
import { arbitraryV0260Log } from '../support/arbitrary-v0-2-60-events.js';
import { V0260_GOLDEN_CASES, v0260Fixture } from '../support/v0-2-60-fixtures.js';
import { extractSdkV0260Fold, type SdkV0260Fold, sdkV0260SnapshotAsJson } from '../support/v0-2-60-sdk-fold.js';

/**
 * The projection's in-memory fold against the v0.2.60 Node SDK's own
 * `rebuildOsSnapshotFromSessionEvents`, loaded from the SDK's tarball in the shared folder (the
 * test is skipped without it, except in CI). Each log is read by each fold as it reads logs:
 * `parseJson` for the projection, `JSON.parse` for the SDK.
 */
const inCi = process.env.CI === 'true';
let rebuild: SdkV0260Fold | undefined;
beforeAll(async () => {
  rebuild = await extractSdkV0260Fold();
  if (rebuild === undefined && !inCi) console.warn('test/projections: the v0.2.60 SDK is neither prepared (bash scripts/sdk/prepare-sdk.sh) nor its tarball in ../shared/deepstrike-sdk: the SDK comparison is skipped');
});

function ours(events: readonly JsonValue[]): JsonObject {
  const { state } = foldEvents(osSnapshotV0260Projection, events.map((event) => parseJson(stringifyJson(event)) as JsonObject));
  return osSnapshotV0260Projection.toJson(state) as JsonObject;
}

function sdkRaw(events: readonly JsonValue[]) {
  return rebuild!(events.map((event) => JSON.parse(stringifyJson(event)) as unknown));
}

/** Skips a test when the SDK is not there (outside CI, where its absence fails the test). */
function withSdk(test: () => void): (context: { skip: () => void }) => void {
  return (context) => {
    if (rebuild === undefined && !inCi) return context.skip();
    expect(rebuild, 'the v0.2.60 SDK must be prepared in CI (.ci/run runs bash scripts/sdk/prepare-sdk.sh)').toBeDefined();
    test();
  };
}

describe("the v0.2.60 snapshot and the v0.2.60 SDK's own fold", () => {
  it(
    'are equal on logs as the runtime writes them (every kind read, counted or ignored, optional fields missing or null)',
    withSdk(() => {
      fc.assert(
        fc.property(arbitraryV0260Log({ sdkComparable: true, maxLength: 60 }), (log) => {
          expect(stringifyJson(ours(log))).toBe(stringifyJson(sdkV0260SnapshotAsJson(sdkRaw(log))));
        }),
        { numRuns: 300 },
      );
    }),
  );

  it(
    "are equal on the logs the SDK's FileSessionLog wrote and on its golden fixtures' events",
    withSdk(() => {
      const folder = new URL('../fixtures/sdk-v0.2.60-log/', import.meta.url);
      const logs: JsonValue[][] = readdirSync(folder)
        .filter((file) => file.endsWith('.jsonl'))
        .map((file) => readFileSync(new URL(file, folder), 'utf8').trim().split('\n').map((line) => (parseJson(line) as JsonObject)['event']!));
      for (const [, eventsFile] of V0260_GOLDEN_CASES) logs.push(v0260Fixture(eventsFile) as JsonValue[]);
      expect(logs.length).toBe(4);
      for (const log of logs) expect(stringifyJson(ours(log))).toBe(stringifyJson(sdkV0260SnapshotAsJson(sdkRaw(log))));
    }),
  );

  // Where the SDK's fold is not the Rust fold's, the projection follows the Rust fold; none of
  // these is written by the SDK's own writers (kernel-event-log.ts) but the large tokens.
  it.for([
    [
      'an empty reservation_id: the Rust record keeps "", the SDK drops a falsy one',
      { kind: 'budget_exceeded', turn: 1, operation_id: 'op', reservation_id: '', budget: 'tokens' },
      ['budget_exceeded', '[{"turn":1,"operation_id":"op","reservation_id":"","budget":"tokens"}]'],
      ['budgetExceeded', '[{"turn":1,"operation_id":"op","budget":"tokens"}]'],
    ],
    [
      'an empty parent_session_id, and parent_task_id, which the Rust record has not',
      { kind: 'agent_process_changed', turn: 1, agent_id: 'a', parent_session_id: '', parent_task_id: 'task-1', state: 'running' },
      ['process_by_agent', '[{"turn":1,"agent_id":"a","parent_session_id":"","state":"running"}]'],
      ['processByAgent', '[{"turn":1,"agent_id":"a","parent_task_id":"task-1","state":"running"}]'],
    ],
    [
      'tokens above 2^53: a u64, exact; the SDK reads a JSON number',
      { kind: 'budget_usage_reported', turn: 1, operation_id: 'op', reservation_id: 'r', tokens: 2n ** 53n + 1n, subagents: 0, rounds: 1 },
      ['budget_usage_reported', '[{"turn":1,"operation_id":"op","reservation_id":"r","tokens":9007199254740993,"subagents":0,"rounds":1}]'],
      ['budgetUsageReported', '[{"turn":1,"operation_id":"op","reservation_id":"r","tokens":9007199254740992,"subagents":0,"rounds":1}]'],
    ],
    [
      'pending_call_ids missing: serde(default) gives [], the SDK keeps it missing',
      { kind: 'operation_cancelled', turn: 1, operation_id: 'op', reason: 'user' },
      ['cancellations', '[{"turn":1,"operation_id":"op","reason":"user","pending_call_ids":[]}]'],
      ['cancellations', '[{"turn":1,"operation_id":"op","reason":"user"}]'],
    ],
    [
      'pending_call_ids null: read as missing, the SDK keeps null',
      { kind: 'operation_cancelled', turn: 1, operation_id: 'op', reason: 'user', pending_call_ids: null },
      ['cancellations', '[{"turn":1,"operation_id":"op","reason":"user","pending_call_ids":[]}]'],
      ['cancellations', '[{"turn":1,"operation_id":"op","reason":"user","pending_call_ids":null}]'],
    ],
    [
      'a seed-era budget_exceeded without operation_id: unreadable (the session stops), the SDK folds it',
      { kind: 'budget_exceeded', turn: 3, budget: 'tokens' },
      ['budget_exceeded', '[]'],
      ['budgetExceeded', '[{"turn":3,"budget":"tokens"}]'],
    ],
    [
      'a usage report without tokens: unreadable (the session stops), the SDK folds it',
      { kind: 'budget_usage_reported', turn: 1, operation_id: 'op', reservation_id: 'r', subagents: 0, rounds: 1 },
      ['budget_usage_reported', '[]'],
      ['budgetUsageReported', '[{"turn":1,"operation_id":"op","reservation_id":"r","subagents":0,"rounds":1}]'],
    ],
  ] as const)('differ on purpose: %s', ([, event, [ourKey, ourValue], [sdkKey, sdkValue]], context) =>
    withSdk(() => {
      expect(stringifyJson(ours([event])[ourKey]!)).toBe(ourValue);
      expect(stringifyJson(sdkRaw([event])[sdkKey])).toBe(sdkValue);
    })(context),
  );
});
