import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { AgentProcessChanged, SessionEvent } from '../../src/events/session-event.js';
import { validateEvent } from '../../src/events/validate-event.js';
import type { JsonObject } from '../../src/json/json-value.js';
import { parseJson } from '../../src/json/parse-json.js';
import {
  emptyOsSnapshot,
  foldOsSnapshot,
  OS_SNAPSHOT_KEYS,
  type OsSnapshot,
} from '../../projections/os-snapshot/index.js';
import { parseOsSnapshot, serializeOsSnapshot } from '../../src/deprecated-os-snapshot.js';

function fixtureText(name: string): string {
  return readFileSync(new URL(`../fixtures/os-snapshot/${name}`, import.meta.url), 'utf8');
}

/** A fixture's events, each parsed exactly and validated (defaults filled in). */
function fixtureEvents(name: string): SessionEvent[] {
  const value = parseJson(fixtureText(name));
  if (!Array.isArray(value)) throw new Error(`${name}: expected a JSON array of events`);
  return value.map((event) => validateEvent(event));
}

/** Validates an event written as a literal, as the fold expects them. */
function ev(event: JsonObject & { kind: string }): SessionEvent {
  return validateEvent(event);
}

function processChanged(turn: number, agentId: string, state: string, parent = 'parent'): SessionEvent {
  return ev({
    kind: 'agent_process_changed',
    turn,
    agent_id: agentId,
    parent_session_id: parent,
    role: 'worker',
    isolation: 'shared',
    context_inheritance: 'none',
    state,
  });
}

function signal(turn: number, signalId: string, disposition = 'queue', queueDepth = 1): SessionEvent {
  return ev({ kind: 'signal_disposed', turn, signal_id: signalId, disposition, queue_depth: queueDepth });
}

const EMPTY_COMPACT =
  '{"last_suspend":null,"last_resumed_turn":null,"process_by_agent":[],"budget_exceeded":[],"signals":[],' +
  '"page_out_count":0,"page_in_count":0,"tool_gated_count":0,"memory_written_count":0,"memory_queried_count":0,' +
  '"memory_validation_failed_count":0,"memory_retrieval_result_count":0}';

describe('golden fixtures (the seed’s golden tests)', () => {
  const cases = [
    ['spawn lifecycle', 'events_spawn_lifecycle.json', 'os_snapshot_spawn_lifecycle.json'],
    ['ask user', 'events_ask_user.json', 'os_snapshot_ask_user.json'],
  ] as const;

  it.each(cases)('%s: serializes byte for byte as the fixture and deep-equals it', (_name, eventsFile, snapshotFile) => {
    const snapshot = foldOsSnapshot(fixtureEvents(eventsFile));
    const expectedText = fixtureText(snapshotFile);

    expect(serializeOsSnapshot(snapshot, { indent: 2 })).toBe(expectedText.replace(/\n$/, ''));
    expect(snapshot).toEqual(parseOsSnapshot(expectedText));
    expect(snapshot).toEqual(JSON.parse(expectedText));
  });

  it('spawn lifecycle: the values spelled out by the spec', () => {
    const snapshot = foldOsSnapshot(fixtureEvents('events_spawn_lifecycle.json'));
    expect(snapshot).toEqual({
      ...emptyOsSnapshot(),
      last_suspend: { turn: 3, reason: 'sub_agent_await', pending_calls: ['child-1'] },
      last_resumed_turn: 5,
      process_by_agent: [{ turn: 4, agent_id: 'child-1', parent_session_id: 'parent', state: 'joined' }],
      signals: [{ turn: 2, signal_id: 'sig-a', disposition: 'queue', queue_depth: 1 }],
    });
  });

  it('ask user: the values spelled out by the spec', () => {
    const snapshot = foldOsSnapshot(fixtureEvents('events_ask_user.json'));
    expect(snapshot).toEqual({
      ...emptyOsSnapshot(),
      last_suspend: { turn: 2, reason: 'ask_user', pending_calls: ['c1'] },
      last_resumed_turn: 3,
      tool_gated_count: 1,
    });
  });
});

describe('foldOsSnapshot', () => {
  it('rebuild_tracks_process_and_signals (the seed’s inline test)', () => {
    const events: SessionEvent[] = [
      {
        kind: 'agent_process_changed',
        turn: 1,
        agent_id: 'child-1',
        parent_session_id: 'parent',
        role: 'worker',
        isolation: 'shared',
        context_inheritance: 'none',
        state: 'running',
        permitted_capability_ids: [],
      },
      { kind: 'signal_disposed', turn: 2, signal_id: 'sig-a', disposition: 'queue', queue_depth: 1 },
      { kind: 'suspended', turn: 3, reason: 'ask_user', pending_calls: ['c1'] },
      {
        kind: 'agent_process_changed',
        turn: 4,
        agent_id: 'child-1',
        parent_session_id: 'parent',
        role: 'worker',
        isolation: 'shared',
        context_inheritance: 'none',
        state: 'joined',
        permitted_capability_ids: [],
        result_termination: 'completed',
      },
    ];
    const snapshot = foldOsSnapshot(events);
    expect(snapshot.process_by_agent).toHaveLength(1);
    expect(snapshot.process_by_agent[0]?.state).toBe('joined');
    expect(snapshot.signals).toHaveLength(1);
    expect(snapshot.last_suspend?.reason).toBe('ask_user');
  });

  it('folds no events into the empty snapshot', () => {
    expect(foldOsSnapshot([])).toEqual(emptyOsSnapshot());
    expect(serializeOsSnapshot(foldOsSnapshot([]))).toBe(EMPTY_COMPACT);
  });

  it('keeps the last suspended event, with its default pending_calls', () => {
    const snapshot = foldOsSnapshot([
      ev({ kind: 'suspended', turn: 2, reason: 'ask_user', pending_calls: ['c1', 'c2'] }),
      ev({ kind: 'resumed', turn: 3 }),
      ev({ kind: 'suspended', turn: 7, reason: 'sub_agent_await' }),
    ]);
    expect(snapshot.last_suspend).toEqual({ turn: 7, reason: 'sub_agent_await', pending_calls: [] });
  });

  it('copies pending_calls: changing the event afterwards does not change the snapshot', () => {
    const pending = ['c1'];
    const snapshot = foldOsSnapshot([{ kind: 'suspended', turn: 1, reason: 'ask_user', pending_calls: pending }]);
    pending.push('c2');
    expect(snapshot.last_suspend?.pending_calls).toEqual(['c1']);
  });

  it('keeps the last resumed turn, even a turn 0 after a later one', () => {
    const snapshot = foldOsSnapshot([
      ev({ kind: 'resumed', turn: 9, approved: ['c1'] }),
      ev({ kind: 'resumed', turn: 0, denied: ['c2'] }),
    ]);
    expect(snapshot.last_resumed_turn).toBe(0);
    expect(snapshot.last_suspend).toBeNull();
  });

  it('keeps one process per agent, in order of first appearance, with the latest fields', () => {
    const snapshot = foldOsSnapshot([
      processChanged(1, 'a', 'running'),
      processChanged(2, 'b', 'running'),
      processChanged(3, 'a', 'joined', 'other-parent'),
      processChanged(4, 'c', 'running'),
      processChanged(5, 'b', 'failed'),
      processChanged(6, 'a', 'running'),
    ]);
    expect(snapshot.process_by_agent).toEqual([
      { turn: 6, agent_id: 'a', parent_session_id: 'parent', state: 'running' },
      { turn: 5, agent_id: 'b', parent_session_id: 'parent', state: 'failed' },
      { turn: 4, agent_id: 'c', parent_session_id: 'parent', state: 'running' },
    ]);
  });

  it('keys processes by agent id safely: __proto__, constructor and the empty string are ordinary ids', () => {
    const snapshot = foldOsSnapshot([
      processChanged(1, '__proto__', 'running'),
      processChanged(2, 'constructor', 'running'),
      processChanged(3, '', 'running'),
      processChanged(4, '__proto__', 'joined'),
      processChanged(5, 'toString', 'failed'),
    ]);
    expect(snapshot.process_by_agent.map((p) => [p.agent_id, p.state])).toEqual([
      ['__proto__', 'joined'],
      ['constructor', 'running'],
      ['', 'running'],
      ['toString', 'failed'],
    ]);
  });

  it('reads a missing state as "running", whether or not the validator filled it in', () => {
    const wire = {
      kind: 'agent_process_changed',
      turn: 1,
      agent_id: 'child-1',
      parent_session_id: 'parent',
      role: 'worker',
      isolation: 'shared',
      context_inheritance: 'none',
    } as const;
    const expected = [{ turn: 1, agent_id: 'child-1', parent_session_id: 'parent', state: 'running' }];
    expect(foldOsSnapshot([ev(wire)]).process_by_agent).toEqual(expected);
    // Unvalidated (the type says state is present; the fold does not rely on it).
    expect(foldOsSnapshot([wire as unknown as AgentProcessChanged]).process_by_agent).toEqual(expected);
  });

  it('appends every signal and every exceeded budget in log order, duplicates included', () => {
    const snapshot = foldOsSnapshot([
      signal(1, 'sig-a'),
      ev({ kind: 'budget_exceeded', turn: 1, budget: 'tokens' }),
      signal(1, 'sig-a'),
      signal(2, 'sig-b', 'dropped', 0),
      ev({ kind: 'budget_exceeded', turn: 1, budget: 'tokens' }),
      ev({ kind: 'budget_exceeded', turn: 3, budget: 'turns' }),
    ]);
    expect(snapshot.signals).toEqual([
      { turn: 1, signal_id: 'sig-a', disposition: 'queue', queue_depth: 1 },
      { turn: 1, signal_id: 'sig-a', disposition: 'queue', queue_depth: 1 },
      { turn: 2, signal_id: 'sig-b', disposition: 'dropped', queue_depth: 0 },
    ]);
    expect(snapshot.budget_exceeded).toEqual([
      { turn: 1, budget: 'tokens' },
      { turn: 1, budget: 'tokens' },
      { turn: 3, budget: 'turns' },
    ]);
  });

  it('counts the seven counted kinds, both shapes of memory_retrieval_result included', () => {
    const snapshot = foldOsSnapshot([
      ev({ kind: 'page_out', turn: 1 }),
      ev({ kind: 'page_out', turn: 2, message_count: 4 }),
      ev({ kind: 'page_in', turn: 3, entry_count: 2 }),
      ev({ kind: 'tool_gated', turn: 3, call_id: 'c1', tool: 'shell', reason: 'ask_user' }),
      ev({ kind: 'memory_written', turn: 4, memory_id: 'm1', memory_kind: 'fact', size_bytes: 10 }),
      ev({ kind: 'memory_written', turn: 4, memory_id: 'm2', memory_kind: 'fact', size_bytes: 10 }),
      ev({ kind: 'memory_written', turn: 4, memory_id: 'm3', memory_kind: 'fact', size_bytes: 10 }),
      ev({ kind: 'memory_queried', turn: 5, query_context: 'q', requested_k: 2n ** 64n - 1n, requires_async_response: false }),
      ev({ kind: 'memory_validation_failed', turn: 5, memory_id: 'm1', error: 'bad' }),
      ev({ kind: 'memory_validation_failed', turn: 6, memory_id: 'm1', error: 'bad' }),
      ev({ kind: 'memory_retrieval_result', retrieval: { selected_memory_ids: ['m1'], selection_rationale: 'r' } }),
      ev({ kind: 'memory_retrieval_result', selected_memory_ids: [], selection_rationale: 'flat (Node SDK)' }),
    ]);
    expect(snapshot).toEqual({
      ...emptyOsSnapshot(),
      page_out_count: 2,
      page_in_count: 1,
      tool_gated_count: 1,
      memory_written_count: 3,
      memory_queried_count: 1,
      memory_validation_failed_count: 2,
      memory_retrieval_result_count: 2,
    });
  });

  it('ignores unknown kinds, even when they carry snapshot-like fields', () => {
    const snapshot = foldOsSnapshot([
      ev({ kind: 'workflow_completed', turn: 1 }),
      ev({ kind: 'summary_upgraded', turn: 2, agent_id: 'child-1', parent_session_id: 'p', state: 'joined' }),
      ev({ kind: 'group_budget_charged', turn: 3, budget: 'tokens', signal_id: 's', reason: 'x' }),
      ev({ kind: 'constructor' }),
    ]);
    expect(snapshot).toEqual(emptyOsSnapshot());
  });

  it('ignores the known kinds without a snapshot effect', () => {
    const snapshot = foldOsSnapshot([
      ev({ kind: 'run_started', run_id: 'r', goal: 'g', agent_id: 'child-1' }),
      ev({ kind: 'llm_completed', turn: 1, message: { role: 'assistant', content: 'hi' } }),
      ev({ kind: 'tool_requested', turn: 1, calls: [{ id: 'c1', name: 'shell', arguments: {} }] }),
      ev({ kind: 'tool_completed', turn: 1, results: [{}] }),
      ev({ kind: 'tool_argument_repaired', turn: 1, tool: 't', original_arguments: 'a', repaired_arguments: 'b' }),
      ev({ kind: 'permission_requested', turn: 1, tool: 't', arguments: '{}' }),
      ev({ kind: 'permission_resolved', turn: 1, approved: true, responder: 'user' }),
      ev({ kind: 'tool_denied', turn: 1, call_id: 'c1', tool_name: 't', reason: 'no' }),
      ev({ kind: 'compressed', turn: 1, archived_seq_range: [0, 2n ** 60n] }),
      ev({ kind: 'large_result_spooled', turn: 1, call_id: 'c1', tool: 't', original_size: 9, preview_size: 1 }),
      ev({ kind: 'capability_changed', turn: 1, added: ['x'] }),
      ev({ kind: 'context_renewed', turn: 1, sprint: 2, handoff_ref: 'h' }),
      ev({ kind: 'checkpoint_taken', turn: 1, history_len: 3 }),
      ev({ kind: 'rollbacked', turn: 1, checkpoint_history_len: 3, reason: { kind: 'user_requested' } }),
      ev({ kind: 'milestone_advanced', turn: 1, phase_id: 'p1' }),
      ev({ kind: 'milestone_blocked', turn: 1, phase_id: 'p1', reason: 'r' }),
      ev({ kind: 'run_terminal', reason: 'completed', turns_used: 1, total_tokens: 2n ** 53n + 1n }),
    ]);
    expect(snapshot).toEqual(emptyOsSnapshot());
  });

  it('reads any iterable once, such as a generator', () => {
    function* events(): Generator<SessionEvent> {
      yield signal(1, 'sig-a');
      yield processChanged(2, 'a', 'running');
    }
    const snapshot = foldOsSnapshot(events());
    expect(snapshot.signals).toHaveLength(1);
    expect(snapshot.process_by_agent).toHaveLength(1);
  });

  it('continues from a snapshot without mutating it', () => {
    const first = foldOsSnapshot([
      processChanged(1, 'a', 'running'),
      processChanged(2, 'b', 'running'),
      signal(2, 'sig-a'),
      ev({ kind: 'budget_exceeded', turn: 2, budget: 'tokens' }),
      ev({ kind: 'suspended', turn: 2, reason: 'ask_user', pending_calls: ['c1'] }),
      ev({ kind: 'page_in', turn: 2, entry_count: 1 }),
    ]);
    const before = structuredClone(first);
    const second = [
      processChanged(3, 'b', 'joined'),
      processChanged(4, 'c', 'running'),
      signal(4, 'sig-b'),
      ev({ kind: 'budget_exceeded', turn: 4, budget: 'turns' }),
      ev({ kind: 'suspended', turn: 4, reason: 'sub_agent_await' }),
      ev({ kind: 'resumed', turn: 5 }),
      ev({ kind: 'page_in', turn: 5, entry_count: 1 }),
    ];
    const continued = foldOsSnapshot(second, first);

    expect(first).toEqual(before);
    expect(continued.process_by_agent.map((p) => [p.agent_id, p.state])).toEqual([
      ['a', 'running'],
      ['b', 'joined'],
      ['c', 'running'],
    ]);
    expect(continued.signals).toHaveLength(2);
    expect(continued.budget_exceeded).toHaveLength(2);
    expect(continued.page_in_count).toBe(2);
    expect(continued.last_suspend).toEqual({ turn: 4, reason: 'sub_agent_await', pending_calls: [] });
    expect(continued.last_resumed_turn).toBe(5);
    expect(foldOsSnapshot([], first)).toEqual(first);
    expect(foldOsSnapshot([], first)).not.toBe(first);
  });

  it('keeps one record per agent across many agents and events (speed is measured by `npm run bench`)', () => {
    const agents = 100_000;
    const events: SessionEvent[] = [];
    let changes = 0;
    for (let i = 0; i < 1_000_000; i++) {
      const agent = `agent-${(changes * 7919) % agents}`; // 7919 is prime to 100,000: every agent comes
      if (i % 4 !== 0) changes++;
      events.push(
        i % 4 === 0
          ? { kind: 'signal_disposed', turn: i % 1000, signal_id: 's', disposition: 'queue', queue_depth: 1 }
          : {
              kind: 'agent_process_changed',
              turn: i % 1000,
              agent_id: agent,
              parent_session_id: 'p',
              role: 'worker',
              isolation: 'shared',
              context_inheritance: 'none',
              state: i % 3 === 0 ? 'joined' : 'running',
              permitted_capability_ids: [],
            },
      );
    }
    const snapshot = foldOsSnapshot(events);
    expect(snapshot.process_by_agent).toHaveLength(agents);
    expect(snapshot.process_by_agent.slice(0, 3).map((record) => record.agent_id)).toEqual(['agent-0', 'agent-7919', 'agent-15838']);
    expect(snapshot.signals).toHaveLength(250_000);
  });
});

describe('serializeOsSnapshot / parseOsSnapshot', () => {
  const full: OsSnapshot = {
    last_suspend: { turn: 3, reason: 'sub_agent_await', pending_calls: ['child-1'] },
    last_resumed_turn: 5,
    process_by_agent: [{ turn: 4, agent_id: 'child-1', parent_session_id: 'parent', state: 'joined' }],
    budget_exceeded: [{ turn: 1, budget: 'tokens' }],
    signals: [{ turn: 2, signal_id: 'sig-a', disposition: 'queue', queue_depth: 1 }],
    page_out_count: 1,
    page_in_count: 2,
    tool_gated_count: 3,
    memory_written_count: 4,
    memory_queried_count: 5,
    memory_validation_failed_count: 6,
    memory_retrieval_result_count: 7,
  };

  it('writes compact JSON by default and indented JSON on request', () => {
    expect(serializeOsSnapshot(emptyOsSnapshot())).toBe(EMPTY_COMPACT);
    expect(serializeOsSnapshot(full)).not.toMatch(/\s/);
    expect(serializeOsSnapshot(full, { indent: 2 })).toBe(JSON.stringify(full, null, 2));
    expect(serializeOsSnapshot(full, { indent: 0 })).toBe(serializeOsSnapshot(full));
  });

  it('writes the spec’s key order whatever the order the object was built in, and drops extra properties', () => {
    const scrambled: OsSnapshot = JSON.parse(`{
      "memory_retrieval_result_count": 7,
      "extra_property": "dropped",
      "signals": [{"queue_depth": 1, "disposition": "queue", "signal_id": "sig-a", "turn": 2}],
      "process_by_agent": [{"state": "joined", "parent_session_id": "parent", "agent_id": "child-1", "turn": 4, "role": "x"}],
      "memory_validation_failed_count": 6,
      "budget_exceeded": [{"budget": "tokens", "turn": 1}],
      "memory_queried_count": 5,
      "last_resumed_turn": 5,
      "memory_written_count": 4,
      "tool_gated_count": 3,
      "page_in_count": 2,
      "page_out_count": 1,
      "last_suspend": {"pending_calls": ["child-1"], "reason": "sub_agent_await", "turn": 3}
    }`) as OsSnapshot;
    expect(serializeOsSnapshot(scrambled)).toBe(serializeOsSnapshot(full));
    expect(Object.keys(JSON.parse(serializeOsSnapshot(scrambled)) as object)).toEqual(OS_SNAPSHOT_KEYS);
  });

  it('writes null for an absent last_suspend and last_resumed_turn', () => {
    const parsed = JSON.parse(serializeOsSnapshot({ ...full, last_suspend: null, last_resumed_turn: null })) as Record<string, unknown>;
    expect(parsed['last_suspend']).toBeNull();
    expect(parsed['last_resumed_turn']).toBeNull();
  });

  it('reads back what it writes', () => {
    expect(parseOsSnapshot(serializeOsSnapshot(full))).toEqual(full);
    expect(parseOsSnapshot(serializeOsSnapshot(full, { indent: 4 }))).toEqual(full);
    expect(parseOsSnapshot(EMPTY_COMPACT)).toEqual(emptyOsSnapshot());
  });

  it('refuses a snapshot with a missing key, an extra key or a value of the wrong type', () => {
    const good = JSON.parse(serializeOsSnapshot(full)) as Record<string, unknown>;
    const { tool_gated_count: _dropped, ...missing } = good;
    expect(() => parseOsSnapshot(JSON.stringify(missing))).toThrow(/missing key "tool_gated_count"/);
    expect(() => parseOsSnapshot(JSON.stringify({ ...good, extra: 1 }))).toThrow(/unexpected key "extra"/);
    expect(() => parseOsSnapshot(JSON.stringify({ ...good, page_in_count: 1.5 }))).toThrow(/page_in_count/);
    expect(() => parseOsSnapshot(JSON.stringify({ ...good, last_resumed_turn: -1 }))).toThrow(/last_resumed_turn/);
    expect(() =>
      parseOsSnapshot(JSON.stringify({ ...good, signals: [{ turn: 1, signal_id: 's', disposition: 'q', queue_depth: '1' }] })),
    ).toThrow(/\$\.signals\[0\]\.queue_depth/);
    expect(() => parseOsSnapshot('[]')).toThrow(/expected an object/);
  });
});
