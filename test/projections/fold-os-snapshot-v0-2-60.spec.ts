import { describe, expect, it } from 'vitest';
import { osSnapshotV0260Projection } from '../../projections/os-snapshot-v0-2-60/index.js';
import type { JsonObject, JsonValue } from '../../src/json/json-value.js';
import { parseJson } from '../../src/json/parse-json.js';
import { stringifyJson } from '../../src/json/stringify-json.js';
import { foldEvents } from '../../src/projector/fold-events.js';
import { asRustReadsIt, MEMORY_COUNTERS, V0260_GOLDEN_CASES, v0260Fixture } from '../support/v0-2-60-fixtures.js';

/** The fold of `events` as the projection's JSON text, and where it stopped. */
function fold(events: JsonValue[]) {
  const { state, stoppedAt } = foldEvents(osSnapshotV0260Projection, events as JsonObject[]);
  const json = osSnapshotV0260Projection.toJson(state) as JsonObject;
  return { json, text: stringifyJson(json), stoppedAt };
}

const KEYS = [
  'last_suspend',
  'last_resumed_turn',
  'process_by_agent',
  'budget_exceeded',
  'budget_usage_reported',
  'cancellations',
  'signals',
  'page_out_count',
  'page_in_count',
  'tool_gated_count',
  ...MEMORY_COUNTERS,
];

describe('golden fixtures of v0.2.60 (tests/fixtures/session)', () => {
  it.each(V0260_GOLDEN_CASES)('%s: the fold is the fixture, key for key in the same order', (_name, eventsFile, snapshotFile) => {
    const events = v0260Fixture(eventsFile) as JsonValue[];
    const expected = v0260Fixture(snapshotFile) as JsonObject;
    // What the fixture lacks of the Rust fold's output: the four memory counters.
    expect(Object.keys(expected)).toEqual(KEYS.filter((key) => !MEMORY_COUNTERS.includes(key)));
    expect(fold(events)).toMatchObject({ text: stringifyJson(asRustReadsIt(expected)), stoppedAt: null });
  });
});

describe('the v0.2.60 snapshot', () => {
  it("has the Rust fold's keys in its order, every one present", () => {
    expect(Object.keys(fold([]).json)).toEqual(KEYS);
    expect(fold([]).text).toBe(
      '{"last_suspend":null,"last_resumed_turn":null,"process_by_agent":[],"budget_exceeded":[],"budget_usage_reported":[],' +
        '"cancellations":[],"signals":[],"page_out_count":0,"page_in_count":0,"tool_gated_count":0,"memory_written_count":0,' +
        '"memory_queried_count":0,"memory_validation_failed_count":0,"memory_retrieval_result_count":0}',
    );
  });

  it('appends each of the four lists in log order, records in the Rust order, an absent reservation_id null', () => {
    const { json } = fold([
      { kind: 'signal_delivery_disposed', queue_depth: 2, disposition: 'queue', signal_id: 'sig-a', attempt: 1, delivery_id: 'd-1', operation_id: 'op-1', turn: 1 },
      { kind: 'budget_exceeded', turn: 2, budget: 'tokens', operation_id: 'op-1' },
      { kind: 'budget_exceeded', turn: 3, budget: 'turns', operation_id: 'op-1', reservation_id: null },
      { kind: 'budget_exceeded', turn: 4, budget: 'turns', operation_id: 'op-2', reservation_id: 'res-1' },
      { kind: 'budget_usage_reported', turn: 5, operation_id: 'op-2', reservation_id: 'res-1', tokens: 1200, subagents: 2, rounds: 3 },
      { kind: 'operation_cancelled', turn: 6, operation_id: 'op-2', reason: 'deadline', pending_call_ids: ['c1', 'c2'] },
      { kind: 'operation_cancelled', turn: 7, operation_id: 'op-3', reason: 'user' },
      { kind: 'signal_delivery_disposed', turn: 8, operation_id: 'op-3', delivery_id: 'd-2', attempt: 2, signal_id: 'sig-a', disposition: 'run', queue_depth: 0 },
    ]);
    expect(stringifyJson(json.signals!)).toBe(
      '[{"turn":1,"operation_id":"op-1","delivery_id":"d-1","attempt":1,"signal_id":"sig-a","disposition":"queue","queue_depth":2},' +
        '{"turn":8,"operation_id":"op-3","delivery_id":"d-2","attempt":2,"signal_id":"sig-a","disposition":"run","queue_depth":0}]',
    );
    expect(stringifyJson(json.budget_exceeded!)).toBe(
      '[{"turn":2,"operation_id":"op-1","reservation_id":null,"budget":"tokens"},{"turn":3,"operation_id":"op-1","reservation_id":null,"budget":"turns"},' +
        '{"turn":4,"operation_id":"op-2","reservation_id":"res-1","budget":"turns"}]',
    );
    expect(stringifyJson(json.budget_usage_reported!)).toBe('[{"turn":5,"operation_id":"op-2","reservation_id":"res-1","tokens":1200,"subagents":2,"rounds":3}]');
    expect(stringifyJson(json.cancellations!)).toBe(
      '[{"turn":6,"operation_id":"op-2","reason":"deadline","pending_call_ids":["c1","c2"]},{"turn":7,"operation_id":"op-3","reason":"user","pending_call_ids":[]}]',
    );
  });

  it('keeps a u64 tokens exact above 2^53', () => {
    const events = parseJson(
      '[{"kind":"budget_usage_reported","turn":1,"operation_id":"op","reservation_id":"r","tokens":18446744073709551615,"subagents":0,"rounds":1},' +
        '{"kind":"budget_usage_reported","turn":2,"operation_id":"op","reservation_id":"r","tokens":9007199254740993,"subagents":0,"rounds":1}]',
    ) as JsonValue[];
    expect(fold(events).text).toContain('"tokens":18446744073709551615,');
    expect(fold(events).text).toContain('"tokens":9007199254740993,');
  });

  it('folds agent_process_changed as the SDK writes it: parent_session_id null, parent_task_id not in the record', () => {
    const { json } = fold([
      { kind: 'agent_process_changed', turn: 1, agent_id: 'child-1', parent_task_id: 'task-1', role: 'worker', isolation: 'shared', context_inheritance: 'none', state: 'running', permitted_capability_ids: [] },
      { kind: 'agent_process_changed', turn: 2, agent_id: 'child-2', parent_task_id: '', role: 'worker', isolation: 'shared', context_inheritance: 'none', permitted_capability_ids: [] },
      { kind: 'agent_process_changed', turn: 3, agent_id: 'child-1', parent_session_id: 'parent', state: 'joined', result_termination: 'completed' },
    ]);
    expect(json.process_by_agent).toEqual([
      { turn: 3, agent_id: 'child-1', parent_session_id: 'parent', state: 'joined' },
      { turn: 2, agent_id: 'child-2', parent_session_id: null, state: 'running' },
    ]);
  });

  it('counts the seven kinds whatever their fields; signal_disposed and other kinds change nothing', () => {
    const { json, stoppedAt } = fold([
      { kind: 'page_out', turn: 'x' },
      { kind: 'page_in' },
      { kind: 'tool_gated', turn: 1, call_id: 'c1', tool: 'shell', reason: 'ask_user' },
      { kind: 'memory_written', turn: 1, record_id: 'r', scope: { tenant_id: 't', namespace: 'n' }, memory_kind: 'fact', name: 'x', size_bytes: 3 },
      { kind: 'memory_queried' },
      { kind: 'memory_validation_failed' },
      { kind: 'memory_retrieval_result', hits: [] },
      { kind: 'memory_retrieval_result', selected_memory_ids: [], selection_rationale: '' },
      { kind: 'signal_disposed', turn: 2, signal_id: 'sig-a', disposition: 'queue', queue_depth: 1 },
      { kind: 'group_budget_charged', turn: 'not read', tokens: -1 },
    ]);
    expect(stoppedAt).toBeNull();
    expect(json).toMatchObject({
      signals: [],
      page_out_count: 1,
      page_in_count: 1,
      tool_gated_count: 1,
      memory_written_count: 1,
      memory_queried_count: 1,
      memory_validation_failed_count: 1,
      memory_retrieval_result_count: 2,
    });
  });

  it.each([
    ['a seed-era budget_exceeded (no operation_id)', { kind: 'budget_exceeded', turn: 3, budget: 'tokens' }, 'field "operation_id": missing or null'],
    ['tokens written as a float', { kind: 'budget_usage_reported', turn: 1, operation_id: 'op', reservation_id: 'r', tokens: 1.5, subagents: 0, rounds: 0 }, 'field "tokens": expected a u64 (an integer 0..18446744073709551615), got 1.5'],
    ['tokens missing', { kind: 'budget_usage_reported', turn: 1, operation_id: 'op', reservation_id: 'r', subagents: 0, rounds: 0 }, 'field "tokens": missing or null'],
    ['reservation_id of a usage report missing', { kind: 'budget_usage_reported', turn: 1, operation_id: 'op', tokens: 5, subagents: 0, rounds: 0 }, 'field "reservation_id": missing or null'],
    ['a delivery without its attempt', { kind: 'signal_delivery_disposed', turn: 1, operation_id: 'op', delivery_id: 'd', signal_id: 's', disposition: 'queue', queue_depth: 0 }, 'field "attempt": missing or null'],
    ['a cancellation without its reason', { kind: 'operation_cancelled', turn: 1, operation_id: 'op', pending_call_ids: [] }, 'field "reason": missing or null'],
    ['pending_call_ids not all strings', { kind: 'operation_cancelled', turn: 1, operation_id: 'op', reason: 'user', pending_call_ids: ['c1', 2] }, 'field "pending_call_ids[1]": expected a string, got 2'],
  ])('stops at an event it cannot read: %s', (_name, event, problem) => {
    const before = { kind: 'resumed', turn: 1 };
    const { json, stoppedAt } = fold([before, event, { kind: 'resumed', turn: 9 }]);
    expect(stoppedAt).toEqual({ index: 1, problem });
    expect(json.last_resumed_turn).toBe(1);
  });
});
