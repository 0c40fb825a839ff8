import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { COMPILED_KINDS } from '../../src/events/event-schema.js';
import { KNOWN_EVENT_KIND_LIST, type KnownEventKind } from '../../src/events/session-event.js';
import {
  EventValidationError,
  eventTurn,
  validateEvent,
  type ValidationIssue,
} from '../../src/events/validate-event.js';
import { JsonFloat, type JsonObject, type JsonValue } from '../../src/json/json-value.js';
import { defaultsOf, exampleEvent, nonRequiredFields } from '../support/example-events.js';

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/** A JSON object as parseJson makes it: null prototype. */
function obj(fields: Record<string, JsonValue>): JsonObject {
  return Object.assign(Object.create(null) as JsonObject, fields);
}

/** The issues validateEvent reports, or [] when the event is valid. */
function issuesOf(value: JsonValue, strict = false): ValidationIssue[] {
  try {
    validateEvent(value, { strict });
    return [];
  } catch (error) {
    if (!(error instanceof EventValidationError)) throw error;
    expect(error.issues.length).toBeGreaterThan(0);
    return error.issues;
  }
}

function fieldsOf(value: JsonValue, strict = false): string[] {
  return issuesOf(value, strict).map((issue) => issue.field);
}

/** The single issue of an invalid event. */
function onlyIssue(value: JsonValue, strict = false): ValidationIssue {
  const issues = issuesOf(value, strict);
  expect(issues).toHaveLength(1);
  return issues[0] as ValidationIssue;
}

function withField(kind: KnownEventKind, field: string, value: JsonValue | undefined, which: 'full' | 'minimal' = 'full'): JsonObject {
  const event = exampleEvent(kind, which);
  if (value === undefined) delete event[field];
  else event[field] = value;
  return event;
}

/** Freezes a value and everything inside it, so that any mutation throws. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}

/** Exact text of a value, bigint and JsonFloat included (to compare before/after). */
function exactText(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'bigint' ? `bigint:${v}` : v instanceof JsonFloat ? `float:${v.text}` : v,
  );
}

const U32_MAX = 4294967295;
const U64_MAX = 18446744073709551615n;

// ---------------------------------------------------------------------------------------------
// Every kind: valid examples
// ---------------------------------------------------------------------------------------------

describe('validateEvent: every kind of the contract', () => {
  it('covers the 29 kinds', () => {
    expect(KNOWN_EVENT_KIND_LIST).toHaveLength(29);
    expect(COMPILED_KINDS.size).toBe(29);
  });

  describe.each(KNOWN_EVENT_KIND_LIST)('%s', (kind) => {
    it('accepts the full example (every optional field present) and returns an equal new object', () => {
      const input = exampleEvent(kind);
      const event = validateEvent(input);
      expect(event).not.toBe(input);
      expect({ ...event }).toEqual(input);
      expect(event.kind).toBe(kind);
    });

    it('accepts the minimal example and fills in the default fields only', () => {
      const input = exampleEvent(kind, 'minimal');
      const event = validateEvent(input);
      expect({ ...event }).toEqual({ ...input, ...defaultsOf(kind) });
      for (const [field, value] of Object.entries(nonRequiredFields[kind])) {
        if (value === undefined) expect(field in event).toBe(false); // an opt field stays missing
      }
    });

    it('accepts null on every optional field and keeps it', () => {
      const optional = Object.entries(nonRequiredFields[kind]).filter(([, value]) => value === undefined);
      const input = exampleEvent(kind);
      for (const [field] of optional) input[field] = null;
      const event = validateEvent(input);
      for (const [field] of optional) expect(event[field]).toBeNull();
    });

    it('rejects every required field missing, naming it', () => {
      const minimal = exampleEvent(kind, 'minimal');
      const required = Object.keys(minimal).filter((field) => field !== 'kind');
      for (const field of required) {
        const input = withField(kind, field, undefined, 'minimal');
        if (kind === 'memory_retrieval_result') {
          // Without `retrieval`, the flat shape (Node SDK) is expected: both its fields are missing.
          expect(issuesOf(input)).toEqual([
            { field: 'selected_memory_ids', message: 'required field is missing' },
            { field: 'selection_rationale', message: 'required field is missing' },
          ]);
          continue;
        }
        expect(onlyIssue(input)).toEqual({ field, message: 'required field is missing' });
      }
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Every kind: invalid examples
// ---------------------------------------------------------------------------------------------

interface InvalidCase {
  kind: KnownEventKind;
  what: string;
  event: JsonObject;
  field: string;
  message?: string | RegExp;
}

function bad(kind: KnownEventKind, what: string, patch: Record<string, JsonValue | undefined>, field: string, message?: string | RegExp): InvalidCase {
  const event = exampleEvent(kind);
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) delete event[key];
    else event[key] = value;
  }
  return message === undefined ? { kind, what, event, field } : { kind, what, event, field, message };
}

const invalidCases: InvalidCase[] = [
  bad('run_started', 'goal a number', { goal: 7 }, 'goal', 'expected a string, got 7'),
  bad('run_started', 'criteria with a number', { criteria: ['a', 3] }, 'criteria[1]', 'expected a string, got 3'),
  bad('run_started', 'agent_id an object', { agent_id: obj({}) }, 'agent_id', 'expected a string, got an object'),
  bad('llm_completed', 'message a string', { message: 'hi' }, 'message', 'expected an object, got the string "hi"'),
  bad('llm_completed', 'provider_replay an array', { provider_replay: [] }, 'provider_replay', 'expected an object, got an empty array'),
  bad('llm_completed', 'turn a float', { turn: new JsonFloat('1.5') }, 'turn', 'expected a u32, got the float 1.5'),
  bad('tool_requested', 'a call without name', { calls: [{ id: 'c1', name: 'a', arguments: null }, { id: 'c2', arguments: {} }] }, 'calls[1].name', 'required field is missing'),
  bad('tool_requested', 'a call without arguments', { calls: [{ id: 'c1', name: 'a' }] }, 'calls[0].arguments', 'required field is missing'),
  bad('tool_requested', 'a call id a number', { calls: [{ id: 1, name: 'a', arguments: 1 }] }, 'calls[0].id', 'expected a string, got 1'),
  bad('tool_requested', 'a call a string', { calls: ['c1'] }, 'calls[0]', 'expected an object, got the string "c1"'),
  bad('tool_requested', 'calls an object', { calls: obj({}) }, 'calls', 'expected an array of objects, got an object'),
  bad('tool_completed', 'a result a number', { results: [obj({}), 1] }, 'results[1]', 'expected an object, got 1'),
  bad('tool_completed', 'results missing', { results: undefined }, 'results', 'required field is missing'),
  bad('run_terminal', 'total_tokens a string', { total_tokens: '12' }, 'total_tokens', 'expected a u64, got the string "12"'),
  bad('run_terminal', 'turns_used negative', { turns_used: -1 }, 'turns_used', 'expected a u32 (an integer 0..4294967295), got -1'),
  bad('tool_argument_repaired', 'repaired_arguments an object', { repaired_arguments: obj({ q: 1 }) }, 'repaired_arguments', 'expected a string, got an object'),
  bad('permission_requested', 'reason a number', { reason: 5 }, 'reason', 'expected a string, got 5'),
  bad('permission_requested', 'arguments an object', { arguments: obj({}) }, 'arguments', 'expected a string, got an object'),
  bad('permission_resolved', 'approved a string', { approved: 'yes' }, 'approved', 'expected a boolean, got the string "yes"'),
  bad('permission_resolved', 'approved null', { approved: null }, 'approved', 'expected a boolean, got null'),
  bad('tool_denied', 'tool_name missing', { tool_name: undefined }, 'tool_name', 'required field is missing'),
  bad('compressed', 'range of one item', { archived_seq_range: [1] }, 'archived_seq_range', 'expected an array of exactly 2 u64s, got an array of 1 item'),
  bad('compressed', 'range of three items', { archived_seq_range: [1, 2, 3] }, 'archived_seq_range', 'expected an array of exactly 2 u64s, got an array of 3 items'),
  bad('compressed', 'range end negative', { archived_seq_range: [1, -2] }, 'archived_seq_range[1]', /^expected a u64 \(an integer 0\.\.18446744073709551615\), got -2$/),
  bad('compressed', 'summary_tokens a float', { summary_tokens: new JsonFloat('18.0') }, 'summary_tokens', 'expected a u32, got the float 18.0'),
  bad('compressed', 'preserved_refs null', { preserved_refs: null }, 'preserved_refs', /^expected an array of strings, got null/),
  bad('page_out', 'message_count null', { message_count: null }, 'message_count', 'expected a u32, got null (a missing field takes 0, but null is not allowed)'),
  bad('page_out', 'tier_hint a boolean', { tier_hint: false }, 'tier_hint', 'expected a string, got the boolean false'),
  bad('page_in', 'entry_count missing', { entry_count: undefined }, 'entry_count', 'required field is missing'),
  bad('large_result_spooled', 'preview_size 2^32', { preview_size: 4294967296 }, 'preview_size', 'expected a u32 (an integer 0..4294967295), got 4294967296'),
  bad('large_result_spooled', 'spool_ref an array', { spool_ref: ['x'] }, 'spool_ref', 'expected a string, got an array of 1 item'),
  bad('capability_changed', 'added a string', { added: 'web.search' }, 'added', 'expected an array of strings, got the string "web.search"'),
  bad('capability_changed', 'version a number', { version: 1 }, 'version', 'expected a string, got 1'),
  bad('context_renewed', 'sprint 2.0', { sprint: new JsonFloat('2.0') }, 'sprint', 'expected a u32, got the float 2.0'),
  bad('context_renewed', 'handoff_ref missing', { handoff_ref: undefined }, 'handoff_ref', 'required field is missing'),
  bad('suspended', 'reason missing', { reason: undefined }, 'reason', 'required field is missing'),
  bad('suspended', 'a pending call a number', { pending_calls: ['c1', 1] }, 'pending_calls[1]', 'expected a string, got 1'),
  bad('resumed', 'denied null', { denied: null }, 'denied', 'expected an array of strings, got null (a missing field takes [], but null is not allowed)'),
  bad('resumed', 'approved with null', { approved: [null] }, 'approved[0]', 'expected a string, got null'),
  bad('tool_gated', 'call_id null', { call_id: null }, 'call_id', 'expected a string, got null'),
  bad('signal_disposed', 'queue_depth a string', { queue_depth: '1' }, 'queue_depth', 'expected a u32, got the string "1"'),
  bad('signal_disposed', 'disposition missing', { disposition: undefined }, 'disposition', 'required field is missing'),
  bad('budget_exceeded', 'budget with U+0000', { budget: 'tok\u0000ens' }, 'budget', 'contains U+0000, which PostgreSQL cannot store; the snapshot reads this field'),
  bad('checkpoint_taken', 'history_len a boolean', { history_len: true }, 'history_len', 'expected a u32, got the boolean true'),
  bad('rollbacked', 'reason without kind', { reason: obj({ call_id: 'c5' }) }, 'reason.kind', 'required field is missing'),
  bad('rollbacked', 'reason kind a number', { reason: obj({ kind: 3 }) }, 'reason.kind', 'expected a string, got 3'),
  bad('rollbacked', 'reason a string', { reason: 'tool_failure' }, 'reason', 'expected an object, got the string "tool_failure"'),
  bad('agent_process_changed', 'state null', { state: null }, 'state', 'expected a string, got null (a missing field takes "running", but null is not allowed)'),
  bad('agent_process_changed', 'state a number', { state: 1 }, 'state', 'expected a string, got 1'),
  bad('agent_process_changed', 'agent_id missing', { agent_id: undefined }, 'agent_id', 'required field is missing'),
  bad('agent_process_changed', 'permitted id not a string', { permitted_capability_ids: ['a', obj({})] }, 'permitted_capability_ids[1]', 'expected a string, got an object'),
  bad('milestone_advanced', 'capabilities_unlocked with null', { capabilities_unlocked: [null] }, 'capabilities_unlocked[0]', 'expected a string, got null'),
  bad('milestone_blocked', 'phase_id a number', { phase_id: 1 }, 'phase_id', 'expected a string, got 1'),
  bad('memory_written', 'size_bytes negative', { size_bytes: -1 }, 'size_bytes', 'expected a u32 (an integer 0..4294967295), got -1'),
  bad('memory_queried', 'requested_k 2^64', { requested_k: 18446744073709551616n }, 'requested_k', 'expected a u64 (an integer 0..18446744073709551615), got 18446744073709551616'),
  bad('memory_queried', 'requires_async_response 0', { requires_async_response: 0 }, 'requires_async_response', 'expected a boolean, got 0'),
  bad('memory_validation_failed', 'error missing', { error: undefined }, 'error', 'required field is missing'),
  bad('memory_retrieval_result', 'a selected id a number', { retrieval: obj({ selected_memory_ids: [1], selection_rationale: 'x' }) }, 'retrieval.selected_memory_ids[0]', 'expected a string, got 1'),
  bad('memory_retrieval_result', 'retrieval without rationale', { retrieval: obj({ selected_memory_ids: [] }) }, 'retrieval.selection_rationale', 'required field is missing'),
  bad('memory_retrieval_result', 'retrieval null', { retrieval: null }, 'retrieval', 'expected an object, got null'),
  bad('memory_retrieval_result', 'flat without rationale', { retrieval: undefined, selected_memory_ids: ['m1'] }, 'selection_rationale', 'required field is missing'),
];

describe('validateEvent: invalid examples of every kind', () => {
  it('has at least one invalid case for each of the 29 kinds', () => {
    const covered = new Set(invalidCases.map((c) => c.kind));
    expect(KNOWN_EVENT_KIND_LIST.filter((kind) => !covered.has(kind))).toEqual([]);
  });

  it.each(invalidCases.map((c) => [`${c.kind}: ${c.what}`, c] as const))('rejects %s', (_name, c) => {
    let caught: unknown;
    try {
      validateEvent(c.event);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(EventValidationError);
    const error = caught as EventValidationError;
    expect(error.kind).toBe(c.kind);
    expect(error.issues.map((issue) => issue.field)).toEqual([c.field]);
    const issue = error.issues[0] as ValidationIssue;
    if (typeof c.message === 'string') expect(issue.message).toBe(c.message);
    else if (c.message !== undefined) expect(issue.message).toMatch(c.message);
    expect(error.message).toBe(`field "${c.field}": ${issue.message}`);
  });
});

// ---------------------------------------------------------------------------------------------
// Generic rules
// ---------------------------------------------------------------------------------------------

describe('validateEvent: integers', () => {
  const pageIn = (turn: JsonValue): JsonObject => withField('page_in', 'turn', turn);

  it.each([0, 1, 7, U32_MAX])('accepts the u32 %s', (turn) => {
    expect(validateEvent(pageIn(turn))['turn']).toBe(turn);
  });

  it.each<[string, JsonValue, string]>([
    ['-1', -1, 'expected a u32 (an integer 0..4294967295), got -1'],
    ['4294967296', 4294967296, 'expected a u32 (an integer 0..4294967295), got 4294967296'],
    ['the bigint 2^64-1', U64_MAX, 'expected a u32 (an integer 0..4294967295), got 18446744073709551615'],
    ['1.0 as a JsonFloat', new JsonFloat('1.0'), 'expected a u32, got the float 1.0'],
    ['1e0 as a JsonFloat', new JsonFloat('1e0'), 'expected a u32, got the float 1e0'],
    ['the number 1.5', 1.5, 'expected a u32, got the number 1.5'],
    ['-0 (a float for serde_json)', -0, 'expected a u32, got -0 (a negative zero, which the runtime reads as a float)'],
    ['the string "1"', '1', 'expected a u32, got the string "1"'],
    ['null', null, 'expected a u32, got null'],
    ['true', true, 'expected a u32, got the boolean true'],
    ['an array', [1], 'expected a u32, got an array of 1 item'],
    ['an object', obj({ n: 1 }), 'expected a u32, got an object'],
  ])('rejects %s as a u32', (_name, turn, message) => {
    expect(onlyIssue(pageIn(turn))).toEqual({ field: 'turn', message });
  });

  const terminal = (tokens: JsonValue): JsonObject => withField('run_terminal', 'total_tokens', tokens);

  it.each<JsonValue>([0, 1, Number.MAX_SAFE_INTEGER, 9007199254740993n, U64_MAX])('accepts the u64 %s', (tokens) => {
    expect(validateEvent(terminal(tokens))['total_tokens']).toBe(tokens);
  });

  it.each<[string, JsonValue, string]>([
    ['2^64', U64_MAX + 1n, 'expected a u64 (an integer 0..18446744073709551615), got 18446744073709551616'],
    ['-1', -1, 'expected a u64 (an integer 0..18446744073709551615), got -1'],
    ['-2^63 as a bigint', -(2n ** 63n), 'expected a u64 (an integer 0..18446744073709551615), got -9223372036854775808'],
    ['1e3 as a JsonFloat', new JsonFloat('1e3'), 'expected a u64, got the float 1e3'],
    ['the string "12"', '12', 'expected a u64, got the string "12"'],
    ['null', null, 'expected a u64, got null'],
    ['an unsafe number', 2 ** 60, 'expected a u64, got the imprecise number 1152921504606846976 (above 2^53 it must be read as a bigint)'],
  ])('rejects %s as a u64', (_name, tokens, message) => {
    expect(onlyIssue(terminal(tokens))).toEqual({ field: 'total_tokens', message });
  });

  it('accepts a u64 pair in archived_seq_range, bigint included', () => {
    const event = validateEvent(withField('compressed', 'archived_seq_range', [0, U64_MAX]));
    expect(event['archived_seq_range']).toEqual([0, U64_MAX]);
  });

  it('agrees with a u32 oracle on arbitrary values (fast-check)', () => {
    const anyValue: fc.Arbitrary<JsonValue> = fc.oneof(
      fc.integer({ min: -10, max: 10 }),
      fc.integer({ min: U32_MAX - 10, max: U32_MAX + 10 }),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }),
      fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => new JsonFloat(String(d))),
      fc.jsonValue() as fc.Arbitrary<JsonValue>,
    );
    fc.assert(
      fc.property(anyValue, (turn) => {
        const expected = typeof turn === 'number' && Number.isInteger(turn) && turn >= 0 && turn <= U32_MAX && !Object.is(turn, -0);
        const issues = issuesOf(pageIn(turn));
        expect(issues.length === 0).toBe(expected);
        if (!expected) expect(issues).toEqual([{ field: 'turn', message: expect.stringMatching(/^expected a u32/) as string }]);
      }),
      { numRuns: 500 },
    );
  });
});

describe('validateEvent: default and optional fields', () => {
  it('fills in [] / 0 / "running" for missing default fields, and a fresh array each time', () => {
    const a = validateEvent(obj({ kind: 'suspended', turn: 1, reason: 'ask_user' }));
    const b = validateEvent(obj({ kind: 'suspended', turn: 1, reason: 'ask_user' }));
    expect(a['pending_calls']).toEqual([]);
    expect(a['pending_calls']).not.toBe(b['pending_calls']);
    expect(validateEvent(obj({ kind: 'page_out', turn: 1 }))['message_count']).toBe(0);
    const capability = validateEvent(obj({ kind: 'capability_changed', turn: 1 }));
    expect([capability['added'], capability['removed']]).toEqual([[], []]);
  });

  it('keeps a default field that is present', () => {
    expect(validateEvent(withField('page_out', 'message_count', 9))['message_count']).toBe(9);
  });

  it('rejects null on a default field (serde: only a missing key takes the default)', () => {
    expect(fieldsOf(withField('run_started', 'criteria', null))).toEqual(['criteria']);
    expect(fieldsOf(withField('suspended', 'pending_calls', null))).toEqual(['pending_calls']);
    expect(fieldsOf(withField('page_out', 'message_count', null))).toEqual(['message_count']);
    expect(fieldsOf(withField('agent_process_changed', 'permitted_capability_ids', null))).toEqual(['permitted_capability_ids']);
  });

  it('accepts null on an optional field and keeps the null', () => {
    const event = validateEvent(withField('compressed', 'summary_tokens', null));
    expect(event['summary_tokens']).toBeNull();
    expect(validateEvent(withField('rollbacked', 'reason', null))['reason']).toBeNull();
    expect(validateEvent(withField('llm_completed', 'provider_replay', null))['provider_replay']).toBeNull();
  });

  it('leaves a missing optional field missing', () => {
    const event = validateEvent(obj({ kind: 'permission_requested', turn: 1, tool: 't', arguments: '{}' }));
    expect(Object.keys(event)).toEqual(['kind', 'turn', 'tool', 'arguments']);
  });

  it('accepts any JSON in a tool call arguments, null included, but not a missing one', () => {
    for (const args of [null, 0, 'x', [], obj({}), new JsonFloat('1.5'), 2n ** 64n]) {
      expect(issuesOf(withField('tool_requested', 'calls', [obj({ id: 'c', name: 'n', arguments: args })]))).toEqual([]);
    }
    expect(fieldsOf(withField('tool_requested', 'calls', [obj({ id: 'c', name: 'n' })]))).toEqual(['calls[0].arguments']);
  });

  it('accepts empty arrays where a list is required', () => {
    expect(issuesOf(withField('tool_requested', 'calls', []))).toEqual([]);
    expect(issuesOf(withField('tool_completed', 'results', []))).toEqual([]);
  });
});

describe('validateEvent: agent_process_changed state', () => {
  it('reads a missing state as "running"', () => {
    const input = withField('agent_process_changed', 'state', undefined);
    const event = validateEvent(input);
    expect(event['state']).toBe('running');
    expect('state' in input).toBe(false);
  });

  it('keeps any string state', () => {
    for (const state of ['running', 'joined', 'failed', 'something_new', '']) {
      expect(validateEvent(withField('agent_process_changed', 'state', state))['state']).toBe(state);
    }
  });

  it('rejects a null or non-string state', () => {
    for (const state of [null, 1, true, ['running'], obj({})]) {
      expect(fieldsOf(withField('agent_process_changed', 'state', state))).toEqual(['state']);
    }
  });
});

describe('validateEvent: memory_retrieval_result, both shapes', () => {
  it('accepts the nested shape (Rust runtime)', () => {
    const event = validateEvent(
      obj({ kind: 'memory_retrieval_result', retrieval: obj({ selected_memory_ids: ['m1'], selection_rationale: 'why' }) }),
    );
    expect(event['retrieval']).toEqual({ selected_memory_ids: ['m1'], selection_rationale: 'why' });
  });

  it('accepts the flat shape (Node SDK)', () => {
    const input = obj({ kind: 'memory_retrieval_result', selected_memory_ids: [], selection_rationale: 'nothing fit' });
    expect({ ...validateEvent(input) }).toEqual({ ...input });
  });

  it('when retrieval is present, validates it and not the flat fields', () => {
    const input = obj({
      kind: 'memory_retrieval_result',
      retrieval: obj({ selected_memory_ids: ['m1'], selection_rationale: 'why' }),
      selected_memory_ids: 'not checked: an extra field here',
    });
    expect(validateEvent(input)['selected_memory_ids']).toBe('not checked: an extra field here');
  });

  it('rejects an event with neither shape, naming both flat fields', () => {
    expect(fieldsOf(obj({ kind: 'memory_retrieval_result' }))).toEqual(['selected_memory_ids', 'selection_rationale']);
  });

  it('rejects a bad flat field with its index', () => {
    const input = obj({ kind: 'memory_retrieval_result', selected_memory_ids: ['m1', 2], selection_rationale: 'x' });
    expect(fieldsOf(input)).toEqual(['selected_memory_ids[1]']);
  });

  it('has no turn', () => {
    expect(eventTurn(validateEvent(exampleEvent('memory_retrieval_result')))).toBeNull();
  });
});

describe('validateEvent: strings the snapshot reads', () => {
  const unstorable: [string, string][] = [
    ['U+0000', 'a\u0000b'],
    ['a lone high surrogate', 'a\uD800b'],
    ['a lone low surrogate', '\uDC00'],
    ['a high surrogate at the end', 'abc\uDBFF'],
  ];

  it.each(unstorable)('rejects %s in suspended.reason, pending_calls[0], agent_id and the other snapshot strings', (_name, s) => {
    expect(onlyIssue(withField('suspended', 'reason', s)).field).toBe('reason');
    expect(onlyIssue(withField('suspended', 'pending_calls', [s])).field).toBe('pending_calls[0]');
    expect(onlyIssue(withField('agent_process_changed', 'agent_id', s)).field).toBe('agent_id');
    for (const field of ['parent_session_id', 'role', 'isolation', 'context_inheritance', 'state', 'result_termination']) {
      expect(onlyIssue(withField('agent_process_changed', field, s)).field).toBe(field);
    }
    expect(onlyIssue(withField('agent_process_changed', 'permitted_capability_ids', ['ok', s])).field).toBe('permitted_capability_ids[1]');
    expect(onlyIssue(withField('signal_disposed', 'signal_id', s)).field).toBe('signal_id');
    expect(onlyIssue(withField('signal_disposed', 'disposition', s)).field).toBe('disposition');
    expect(onlyIssue(withField('budget_exceeded', 'budget', s)).field).toBe('budget');
  });

  it('says what it found', () => {
    expect(onlyIssue(withField('suspended', 'reason', 'a\u0000')).message).toBe(
      'contains U+0000, which PostgreSQL cannot store; the snapshot reads this field',
    );
    expect(onlyIssue(withField('suspended', 'reason', 'a\uD83D!')).message).toBe(
      'contains a lone surrogate U+D83D, which PostgreSQL cannot store; the snapshot reads this field',
    );
  });

  it('accepts a surrogate pair (an emoji) in a snapshot field', () => {
    expect(validateEvent(withField('suspended', 'reason', 'ask 😀 user'))['reason']).toBe('ask 😀 user');
  });

  it.each(unstorable)('accepts %s in strings the snapshot does not read', (_name, s) => {
    const message = obj({ role: 'assistant', content: s });
    expect(validateEvent(withField('llm_completed', 'message', message))['message']).toBe(message);
    expect(validateEvent(withField('page_out', 'summary', s))['summary']).toBe(s);
    expect(validateEvent(withField('tool_gated', 'reason', s))['reason']).toBe(s);
    expect(validateEvent(withField('run_started', 'goal', s))['goal']).toBe(s);
    expect(validateEvent(withField('memory_written', 'memory_id', s))['memory_id']).toBe(s);
    expect(validateEvent(withField('suspended', `extra_${s.length}`, s))[`extra_${s.length}`]).toBe(s);
  });
});

describe('validateEvent: extra fields and the result object', () => {
  it('keeps extra fields exactly, bigint and JsonFloat included, and returns a new object', () => {
    const float = new JsonFloat('1.50');
    const nested = obj({ deep: [1, obj({ x: null })] });
    const input = obj({
      kind: 'page_in',
      turn: 4,
      entry_count: 2,
      huge: 123456789012345678901234567890n,
      ratio: float,
      nested,
      flag: false,
      nothing: null,
    });
    input['__proto__'] = 'an ordinary key';
    const event = validateEvent(input);
    expect(event).not.toBe(input);
    expect(event['huge']).toBe(123456789012345678901234567890n);
    expect(event['ratio']).toBe(float);
    expect((event['ratio'] as JsonFloat).text).toBe('1.50');
    expect(event['nested']).toBe(nested);
    expect(event['flag']).toBe(false);
    expect(event['nothing']).toBeNull();
    expect(Object.getOwnPropertyDescriptor(event, '__proto__')?.value).toBe('an ordinary key');
    expect(Object.keys(event)).toEqual(Object.keys(input));
  });

  it('accepts a plain (prototype) object as input too', () => {
    expect(validateEvent({ kind: 'page_in', turn: 1, entry_count: 0 })['entry_count']).toBe(0);
  });

  it('never mutates its input, valid or not (deep-frozen inputs)', () => {
    for (const kind of KNOWN_EVENT_KIND_LIST) {
      for (const which of ['full', 'minimal'] as const) {
        const input = deepFreeze(exampleEvent(kind, which));
        const before = exactText(input);
        validateEvent(input);
        expect(exactText(input)).toBe(before);
      }
    }
    const invalid = deepFreeze(obj({ kind: 'suspended', turn: -1, pending_calls: [1] }));
    expect(() => validateEvent(invalid)).toThrow(EventValidationError);
    expect(exactText(invalid)).toBe('{"kind":"suspended","turn":-1,"pending_calls":[1]}');
  });

  it('never mutates its input nor reports an empty issue list, whatever a field holds (fast-check)', () => {
    const anyValue: fc.Arbitrary<JsonValue> = fc.oneof(
      fc.jsonValue() as fc.Arbitrary<JsonValue>,
      fc.bigInt(),
      fc.string({ unit: 'binary' }),
      fc.constantFrom<JsonValue>(new JsonFloat('1.0'), -0, '\u0000', '\uD800', [], [null], ['a', 1]),
    );
    fc.assert(
      fc.property(
        fc.constantFrom(...KNOWN_EVENT_KIND_LIST),
        fc.constantFrom<'full' | 'minimal'>('full', 'minimal'),
        fc.nat(),
        anyValue,
        (kind, which, pick, value) => {
          const input = exampleEvent(kind, which);
          const keys = Object.keys(input).filter((k) => k !== 'kind');
          const key = keys.length === 0 ? 'retrieval' : (keys[pick % keys.length] as string);
          input[key] = value;
          deepFreeze(input);
          const before = exactText(input);
          try {
            const event = validateEvent(input);
            expect(event[key]).toBe(value);
          } catch (error) {
            expect(error).toBeInstanceOf(EventValidationError);
            const issues = (error as EventValidationError).issues;
            expect(issues.length).toBeGreaterThan(0);
            for (const issue of issues) expect(issue.field.startsWith(key)).toBe(true);
          }
          expect(exactText(input)).toBe(before);
        },
      ),
      { numRuns: 1000 },
    );
  });
});

describe('validateEvent: the kind and the shape of the value', () => {
  it.each<[string, JsonValue, string]>([
    ['an array', [1, 2], 'expected an object, got an array of 2 items'],
    ['a string', 'suspended', 'expected an object, got the string "suspended"'],
    ['null', null, 'expected an object, got null'],
    ['a number', 3, 'expected an object, got 3'],
    ['a float', new JsonFloat('3.0'), 'expected an object, got the float 3.0'],
    ['a boolean', true, 'expected an object, got the boolean true'],
  ])('rejects %s as the event', (_name, value, message) => {
    let caught: unknown;
    try {
      validateEvent(value);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(EventValidationError);
    const error = caught as EventValidationError;
    expect(error.issues).toEqual([{ field: '', message }]);
    expect(error.kind).toBeUndefined();
    expect(error.message).toBe(`the event: ${message}`);
  });

  it('accepts an unknown snake_case kind as a shallow copy, unchanged', () => {
    for (const kind of ['workflow_completed', 'summary_upgraded', 'group_budget_charged', 'x', 'a1_b2', 'v2']) {
      const input = obj({ kind, turn: 'anything', nested: obj({ a: [1] }), big: 2n ** 70n });
      const event = validateEvent(input);
      expect(event).not.toBe(input);
      expect(Object.keys(event)).toEqual(['kind', 'turn', 'nested', 'big']);
      expect(event['nested']).toBe(input['nested']);
      expect(event['big']).toBe(2n ** 70n);
    }
  });

  it('rejects an unknown kind in strict mode, but not a known one', () => {
    expect(onlyIssue(obj({ kind: 'workflow_completed' }), true)).toEqual({
      field: 'kind',
      message: 'unknown kind "workflow_completed" (strict mode accepts only the 29 kinds of the contract)',
    });
    for (const kind of KNOWN_EVENT_KIND_LIST) expect(issuesOf(exampleEvent(kind), true)).toEqual([]);
  });

  it.each<[string, JsonValue | undefined, string]>([
    ['missing', undefined, 'required field is missing'],
    ['null', null, 'expected a string, got null'],
    ['a number', 5, 'expected a string, got 5'],
    ['an array', ['suspended'], 'expected a string, got an array of 1 item'],
    ['empty', '', 'expected a non-empty snake_case string, got the empty string ""'],
    ['camelCase', 'toolGated', 'expected a snake_case string such as "tool_gated", got the string "toolGated"'],
    ['PascalCase', 'ToolGated', 'expected a snake_case string such as "tool_gated", got the string "ToolGated"'],
    ['kebab-case', 'tool-gated', 'expected a snake_case string such as "tool_gated", got the string "tool-gated"'],
    ['with a double underscore', 'tool__gated', 'expected a snake_case string such as "tool_gated", got the string "tool__gated"'],
    ['with a trailing underscore', 'tool_', 'expected a snake_case string such as "tool_gated", got the string "tool_"'],
    ['starting with a digit', '1tool', 'expected a snake_case string such as "tool_gated", got the string "1tool"'],
    ['with a space', 'tool gated', 'expected a snake_case string such as "tool_gated", got the string "tool gated"'],
    ['with U+0000', 'tool\u0000', 'expected a snake_case string such as "tool_gated", got the string "tool\\u0000"'],
  ])('rejects a kind that is %s', (_name, kind, message) => {
    const input = obj({ turn: 1 });
    if (kind !== undefined) input['kind'] = kind;
    expect(onlyIssue(input)).toEqual({ field: 'kind', message });
  });
});

describe('EventValidationError', () => {
  it('lists every issue of the event at once, in field order', () => {
    const input = obj({ kind: 'suspended', turn: -1, pending_calls: ['ok', 1, null] });
    let caught: unknown;
    try {
      validateEvent(input);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(EventValidationError);
    expect(caught).toBeInstanceOf(Error);
    const error = caught as EventValidationError;
    expect(error.name).toBe('EventValidationError');
    expect(error.kind).toBe('suspended');
    expect(error.issues).toEqual([
      { field: 'turn', message: 'expected a u32 (an integer 0..4294967295), got -1' },
      { field: 'reason', message: 'required field is missing' },
      { field: 'pending_calls[1]', message: 'expected a string, got 1' },
      { field: 'pending_calls[2]', message: 'expected a string, got null' },
    ]);
    expect(error.message).toBe(
      'field "turn": expected a u32 (an integer 0..4294967295), got -1; field "reason": required field is missing; ' +
        'field "pending_calls[1]": expected a string, got 1; field "pending_calls[2]": expected a string, got null',
    );
  });

  it('reports nested issues with full paths', () => {
    const input = obj({
      kind: 'tool_requested',
      turn: 1,
      calls: [obj({ id: 'c1', name: 'a', arguments: 1 }), obj({ id: 2 }), 'c3'],
    });
    expect(fieldsOf(input)).toEqual(['calls[1].id', 'calls[1].name', 'calls[1].arguments', 'calls[2]']);
  });

  it('keeps every issue but lists at most 20 in the message', () => {
    const input = obj({ kind: 'resumed', turn: 1, approved: Array.from({ length: 25 }, (_, i) => i) });
    let caught: unknown;
    try {
      validateEvent(input);
    } catch (error) {
      caught = error;
    }
    const error = caught as EventValidationError;
    expect(error.issues).toHaveLength(25);
    expect(error.message.match(/field "/g)).toHaveLength(20);
    expect(error.message.endsWith('; and 5 more issues')).toBe(true);
  });

  it('shows long strings cut and escaped', () => {
    const long = 'x'.repeat(100);
    expect(onlyIssue(withField('page_in', 'turn', long)).message).toBe(`expected a u32, got the string "${'x'.repeat(60)}"…`);
  });
});

describe('eventTurn', () => {
  it('returns the turn of every kind that has one, null for the three that have none', () => {
    const withoutTurn = new Set(['run_started', 'run_terminal', 'memory_retrieval_result']);
    for (const kind of KNOWN_EVENT_KIND_LIST) {
      const event = validateEvent(exampleEvent(kind));
      if (withoutTurn.has(kind)) expect(eventTurn(event)).toBeNull();
      else expect(eventTurn(event)).toBe(event['turn']);
    }
  });

  it('ignores an extra turn field on a kind without one', () => {
    expect(eventTurn(validateEvent(withField('run_started', 'turn', 3)))).toBeNull();
    expect(eventTurn(validateEvent(withField('run_terminal', 'turn', 3)))).toBeNull();
  });

  it('reads the turn of an unknown kind when it is a u32, else null', () => {
    const turnOf = (turn: JsonValue | undefined): number | null => {
      const input = obj({ kind: 'workflow_completed' });
      if (turn !== undefined) input['turn'] = turn;
      return eventTurn(validateEvent(input));
    };
    expect(turnOf(7)).toBe(7);
    expect(turnOf(0)).toBe(0);
    expect(turnOf(U32_MAX)).toBe(U32_MAX);
    for (const turn of [undefined, -1, U32_MAX + 1, 2n, new JsonFloat('7.0'), 7.5, '7', null, true, -0]) {
      expect(turnOf(turn)).toBeNull();
    }
  });
});
