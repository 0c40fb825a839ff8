import type { JsonObject } from '../../src/json/json-value.js';
import type { KnownEventKind } from '../../src/events/session-event.js';

/**
 * Valid example events for each of the 29 kinds of the wire contract
 * (`shared/spec/session-events.md`, section 2), as plain objects (numbers only, no bigint or
 * JsonFloat, so `JSON.stringify` works on them).
 *
 * - {@link validExamples}: every field of the kind present, *opt* fields included, so that
 *   `validateEvent` returns an equal object.
 * - {@link minimalExamples}: only the required fields; `validateEvent` fills in the
 *   *default* ones (see {@link defaultsOf}).
 *
 * Each call of {@link exampleEvent} returns a fresh deep copy, safe to modify.
 */
export const validExamples: Record<KnownEventKind, JsonObject> = {
  run_started: {
    kind: 'run_started',
    run_id: 'run-1',
    goal: 'summarize the quarterly report',
    criteria: ['cites sources', 'under 300 words'],
    agent_id: 'agent-main',
    system_prompt: 'You are a careful analyst.',
  },
  llm_completed: {
    kind: 'llm_completed',
    turn: 1,
    message: { role: 'assistant', content: 'Reading the report now.', tool_calls: [] },
    provider_replay: { provider: 'example', response_id: 'resp-1' },
  },
  tool_requested: {
    kind: 'tool_requested',
    turn: 1,
    calls: [
      { id: 'c1', name: 'read_file', arguments: { path: 'report.pdf' } },
      { id: 'c2', name: 'search', arguments: '{"q": "revenue"}' },
    ],
  },
  tool_completed: {
    kind: 'tool_completed',
    turn: 1,
    results: [
      { call_id: 'c1', content: 'page 1 …', is_error: false },
      { call_id: 'c2', content: 'no hits', is_error: false },
    ],
  },
  run_terminal: { kind: 'run_terminal', reason: 'completed', turns_used: 7, total_tokens: 123456 },
  tool_argument_repaired: {
    kind: 'tool_argument_repaired',
    turn: 2,
    tool: 'search',
    original_arguments: '{"q": "revenue",}',
    repaired_arguments: '{"q": "revenue"}',
  },
  permission_requested: {
    kind: 'permission_requested',
    turn: 2,
    tool: 'shell',
    arguments: '{"cmd": "rm -rf build"}',
    reason: 'deletes files',
  },
  permission_resolved: { kind: 'permission_resolved', turn: 2, approved: true, responder: 'user' },
  tool_denied: { kind: 'tool_denied', turn: 2, call_id: 'c3', tool_name: 'shell', reason: 'not permitted' },
  compressed: {
    kind: 'compressed',
    turn: 3,
    archived_seq_range: [0, 41],
    action: 'summarize',
    summary: 'The user asked for a report summary; two files were read.',
    archive_ref: 'archive://run-1/0-41',
    summary_tokens: 18,
    preserved_refs: ['c1'],
  },
  page_out: {
    kind: 'page_out',
    turn: 3,
    action: 'evict',
    summary: 'paged out the search results',
    tier_hint: 'cold',
    message_count: 4,
  },
  page_in: { kind: 'page_in', turn: 4, entry_count: 2 },
  large_result_spooled: {
    kind: 'large_result_spooled',
    turn: 4,
    call_id: 'c4',
    tool: 'read_file',
    original_size: 1048576,
    preview_size: 2048,
    spool_ref: 'spool://c4',
  },
  capability_changed: {
    kind: 'capability_changed',
    turn: 4,
    added: ['web.search'],
    removed: ['fs.write'],
    change_kind: 'mount',
    capability_id: 'web.search',
    version: '1.2.0',
    mounted_by: 'kernel',
    mount_reason: 'milestone unlocked',
  },
  context_renewed: { kind: 'context_renewed', turn: 5, sprint: 2, handoff_ref: 'handoff://run-1/2' },
  suspended: { kind: 'suspended', turn: 3, reason: 'sub_agent_await', pending_calls: ['child-1'] },
  resumed: { kind: 'resumed', turn: 5, approved: ['child-1'], denied: [] },
  tool_gated: { kind: 'tool_gated', turn: 2, call_id: 'c1', tool: 'needs_approval', reason: 'ask_user' },
  signal_disposed: { kind: 'signal_disposed', turn: 2, signal_id: 'sig-a', disposition: 'queue', queue_depth: 1 },
  budget_exceeded: { kind: 'budget_exceeded', turn: 6, budget: 'tokens' },
  checkpoint_taken: { kind: 'checkpoint_taken', turn: 5, history_len: 40 },
  rollbacked: {
    kind: 'rollbacked',
    turn: 6,
    checkpoint_history_len: 40,
    reason: { kind: 'tool_failure', call_id: 'c5' },
  },
  agent_process_changed: {
    kind: 'agent_process_changed',
    turn: 4,
    agent_id: 'child-1',
    parent_session_id: 'parent',
    role: 'worker',
    isolation: 'shared',
    context_inheritance: 'none',
    state: 'joined',
    permitted_capability_ids: ['fs.read'],
    result_termination: 'completed',
  },
  milestone_advanced: {
    kind: 'milestone_advanced',
    turn: 6,
    phase_id: 'draft',
    capabilities_unlocked: ['web.search'],
  },
  milestone_blocked: { kind: 'milestone_blocked', turn: 6, phase_id: 'publish', reason: 'awaiting review' },
  memory_written: { kind: 'memory_written', turn: 7, memory_id: 'm1', memory_kind: 'fact', size_bytes: 512 },
  memory_queried: {
    kind: 'memory_queried',
    turn: 7,
    query_context: 'revenue figures',
    requested_k: 5,
    requires_async_response: false,
  },
  memory_validation_failed: { kind: 'memory_validation_failed', turn: 7, memory_id: 'm2', error: 'schema mismatch' },
  memory_retrieval_result: {
    kind: 'memory_retrieval_result',
    retrieval: { selected_memory_ids: ['m1', 'm3'], selection_rationale: 'most recent facts' },
  },
};

/**
 * The *opt* and *default* fields of each kind (the fields {@link minimalExamples} leave out),
 * with the value a missing *default* field takes (`undefined` for an *opt* field).
 */
export const nonRequiredFields: Record<KnownEventKind, Record<string, unknown>> = {
  run_started: { criteria: [], agent_id: undefined, system_prompt: undefined },
  llm_completed: { provider_replay: undefined },
  tool_requested: {},
  tool_completed: {},
  run_terminal: {},
  tool_argument_repaired: {},
  permission_requested: { reason: undefined },
  permission_resolved: {},
  tool_denied: {},
  compressed: {
    action: undefined,
    summary: undefined,
    archive_ref: undefined,
    summary_tokens: undefined,
    preserved_refs: [],
  },
  page_out: { action: undefined, summary: undefined, tier_hint: undefined, message_count: 0 },
  page_in: {},
  large_result_spooled: { spool_ref: undefined },
  capability_changed: {
    added: [],
    removed: [],
    change_kind: undefined,
    capability_id: undefined,
    version: undefined,
    mounted_by: undefined,
    mount_reason: undefined,
  },
  context_renewed: {},
  suspended: { pending_calls: [] },
  resumed: { approved: [], denied: [] },
  tool_gated: {},
  signal_disposed: {},
  budget_exceeded: {},
  checkpoint_taken: {},
  rollbacked: { reason: undefined },
  agent_process_changed: { state: 'running', permitted_capability_ids: [], result_termination: undefined },
  milestone_advanced: { capabilities_unlocked: [] },
  milestone_blocked: {},
  memory_written: {},
  memory_queried: {},
  memory_validation_failed: {},
  memory_retrieval_result: {},
};

/** The *default* fields of `kind` with the value a missing one takes. */
export function defaultsOf(kind: KnownEventKind): Record<string, unknown> {
  return Object.fromEntries(Object.entries(nonRequiredFields[kind]).filter(([, value]) => value !== undefined));
}

/** Each kind with only its required fields. */
export const minimalExamples: Record<KnownEventKind, JsonObject> = Object.fromEntries(
  Object.entries(validExamples).map(([kind, event]) => {
    const minimal = structuredClone(event);
    for (const field of Object.keys(nonRequiredFields[kind as KnownEventKind])) delete minimal[field];
    return [kind, minimal];
  }),
) as Record<KnownEventKind, JsonObject>;

/** A fresh deep copy of the full (or minimal) example of `kind`. */
export function exampleEvent(kind: KnownEventKind, which: 'full' | 'minimal' = 'full'): JsonObject {
  return structuredClone((which === 'full' ? validExamples : minimalExamples)[kind]);
}
