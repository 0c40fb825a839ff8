/**
 * fast-check arbitraries of events in any shape a runtime may write for the kinds the snapshot
 * reads (shared/spec/session-events.md, section 3). Each field it reads is missing, `null`, of
 * its type, or of another: a number as a string, a float, `1e2`, `-0`, an integer past u32, a
 * bigint, a string holding U+0000 or a lone surrogate, an object. Beside them come the fields
 * it does not read and the counted and ignored kinds. As JSON text (exact number text kept),
 * since that is what is stored.
 *
 * @example
 * ```ts
 * fc.assert(fc.property(arbitraryShapedLog(), (texts) => { … }));
 * ```
 */
import fc from 'fast-check';
import { JsonFloat, type JsonObject, type JsonValue } from '../../src/json/json-value.js';
import { stringifyJson } from '../../src/json/stringify-json.js';

const NOT_A_U32: JsonValue[] = ['3', new JsonFloat('1.5'), new JsonFloat('1e2'), new JsonFloat('3.0'), -0, -1, 4294967296, 18446744073709551615n, true, [], {}];
// Not `{"os_audit_unstorable_string": …}` itself: where an event also holds a string SQL cannot
// read, SQL takes such an object for its own stand-in. Both find the event unreadable; only the
// message differs (`contains U+0000 …` in SQL).
const NOT_A_STRING: JsonValue[] = [7, false, ['x'], { note: 'x' }, 'nul\u0000byte', 'lone\ud800surrogate', '\udc00'];
const NOT_STRINGS: JsonValue[] = ['c1', 3, { a: 1 }, ['c1', 2], ['c1', null], ['ok', 'nul\u0000'], ['\ud800']];

const u32 = fc.oneof(fc.constantFrom(0, 1, 7, 4294967295), fc.nat({ max: 4294967295 }));
const text = fc.constantFrom('ask_user', 'running', 'joined', 'sig-a', 'tokens', 'child-1', '', 'ψ', '😀', '\ufffd', '__proto__');
const strings = fc.array(text, { maxLength: 3 });

/** A field: missing (undefined), null, of its type, or of another. */
function shaped(ofType: fc.Arbitrary<JsonValue>, wrong: readonly JsonValue[]): fc.Arbitrary<JsonValue | undefined> {
  return fc.oneof(
    { weight: 12, arbitrary: ofType },
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 2, arbitrary: fc.constantFrom(...wrong) },
  );
}

const READ_FIELDS: Record<string, Record<string, fc.Arbitrary<JsonValue | undefined>>> = {
  suspended: { turn: shaped(u32, NOT_A_U32), reason: shaped(text, NOT_A_STRING), pending_calls: shaped(strings, NOT_STRINGS) },
  resumed: { turn: shaped(u32, NOT_A_U32), approved: shaped(strings, NOT_STRINGS) },
  agent_process_changed: {
    turn: shaped(u32, NOT_A_U32),
    agent_id: shaped(fc.constantFrom('child-1', 'child-2', '__proto__', 'agënt'), NOT_A_STRING),
    parent_session_id: shaped(text, NOT_A_STRING),
    parent_task_id: shaped(text, NOT_A_STRING),
    state: shaped(fc.constantFrom('running', 'joined', 'failed'), NOT_A_STRING),
    role: shaped(text, NOT_A_STRING),
    isolation: shaped(text, NOT_A_STRING),
    context_inheritance: shaped(text, NOT_A_STRING),
    result_termination: shaped(text, NOT_A_STRING),
    permitted_capability_ids: shaped(strings, NOT_STRINGS),
  },
  budget_exceeded: { turn: shaped(u32, NOT_A_U32), budget: shaped(text, NOT_A_STRING), operation_id: shaped(text, NOT_A_STRING) },
  signal_disposed: {
    turn: shaped(u32, NOT_A_U32),
    signal_id: shaped(text, NOT_A_STRING),
    disposition: shaped(fc.constantFrom('queue', 'ignore', 'interrupt_now'), NOT_A_STRING),
    queue_depth: shaped(u32, NOT_A_U32),
  },
};

/** Kinds the snapshot counts or ignores, in the shapes the SDKs write them (any fields). */
const OTHER_KINDS = ['page_out', 'page_in', 'tool_gated', 'memory_written', 'memory_queried', 'memory_validation_failed', 'memory_retrieval_result', 'llm_completed', 'signal_delivery_disposed', 'workflow_completed'];

function event(kind: string, fields: Record<string, JsonValue | undefined>): JsonObject {
  const object = Object.create(null) as JsonObject;
  object['kind'] = kind;
  for (const [name, value] of Object.entries(fields)) if (value !== undefined) object[name] = value;
  return object;
}

/** One event, as its JSON text. */
export function arbitraryShapedEvent(): fc.Arbitrary<string> {
  const read = Object.entries(READ_FIELDS).map(([kind, fields]) => fc.record(fields).map((values) => event(kind, values)));
  const other = fc.constantFrom(...OTHER_KINDS).chain((kind) =>
    fc.record({ turn: shaped(u32, NOT_A_U32), content: shaped(text, NOT_A_STRING) }).map((values) => event(kind, values)),
  );
  return fc.oneof({ weight: 3, arbitrary: fc.oneof(...read) }, { weight: 2, arbitrary: other }).map((value) => stringifyJson(value));
}

/** A session log of such events, as their JSON texts. */
export function arbitraryShapedLog(options: { maxLength?: number } = {}): fc.Arbitrary<string[]> {
  return fc.array(arbitraryShapedEvent(), { maxLength: options.maxLength ?? 40 });
}
