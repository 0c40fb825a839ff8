/**
 * fast-check arbitraries of session events as they are written on the wire
 * (`shared/spec/session-events.md`, sections 1 and 2). Every generated event is VALID:
 * `validateEvent` accepts it. But it is the raw JSON object, so it can be stored, validated,
 * imported and folded by every part of the project. Default fields may be missing, optional
 * fields missing or `null`, `agent_process_changed.state` sometimes missing, extra fields
 * present. Values are {@link JsonValue}s: u64 above 2^53 are `bigint`, literal floats in free
 * JSON are {@link JsonFloat}s. Objects are plain objects built with `Object.fromEntries`, so a
 * `__proto__` key is an own property, never the prototype.
 *
 * Pools of agent ids, signal ids, call ids… are small so that agents repeat within a log and
 * upserts and orderings get exercised. They contain hostile names (`__proto__`, `constructor`,
 * the empty string, non-ASCII) that break code keying plain objects by id.
 *
 * @example
 * ```ts
 * fc.assert(fc.property(arbitrarySessionLog(), (log) => { … }));
 * fc.assert(fc.property(arbitraryEvent({ kinds: ['suspended', 'resumed'] }), (event) => { … }));
 * ```
 */
import fc from 'fast-check';
import { KNOWN_EVENT_KIND_LIST, KNOWN_EVENT_KINDS, type KnownEventKind } from '../../src/events/session-event.js';
import { JsonFloat, type JsonObject, type JsonValue } from '../../src/json/json-value.js';

/** An event as written on the wire: a JSON object with a `kind`. */
export type WireEvent = JsonObject & { kind: string };

export interface ArbitraryEventOptions {
  /**
   * Generate only these kinds (known kinds, or unknown snake_case kinds, which get the
   * unknown-kind shape). Default: every known kind, plus unknown kinds if `unknownKinds`.
   */
  kinds?: readonly string[];
  /** Also generate kinds the contract does not name (`workflow_completed`, …). Default true. */
  unknownKinds?: boolean;
  /** Sometimes add extra fields the contract does not name. Default true. */
  extraFields?: boolean;
  /**
   * Sometimes leave out *default* fields and `agent_process_changed.state`, and leave out or
   * set to `null` *opt* fields. Default true; false always writes every field with a value.
   */
  omitDefaults?: boolean;
  /** Allow JSON floats ({@link JsonFloat}) inside free-form JSON (messages, extras…). Default true. */
  floats?: boolean;
  /**
   * Allow strings PostgreSQL's `text` cannot hold (`\u0000`, lone surrogates) in free
   * text and free JSON. Never in the fields the snapshot reads, where the validator refuses
   * them. Default false.
   */
  hostileStrings?: boolean;
}

/** Resolved options. */
type Options = Required<Omit<ArbitraryEventOptions, 'kinds'>> & { kinds: readonly string[] | undefined };

function resolve(options: ArbitraryEventOptions | undefined): Options {
  return {
    kinds: options?.kinds,
    unknownKinds: options?.unknownKinds ?? true,
    extraFields: options?.extraFields ?? true,
    omitDefaults: options?.omitDefaults ?? true,
    floats: options?.floats ?? true,
    hostileStrings: options?.hostileStrings ?? false,
  };
}

// ---------------------------------------------------------------------------------------------
// Kinds

/** The kinds the OS snapshot reads (section 2's last column). */
export const SNAPSHOT_KINDS = [
  'suspended',
  'resumed',
  'agent_process_changed',
  'budget_exceeded',
  'signal_disposed',
  'page_out',
  'page_in',
  'tool_gated',
  'memory_written',
  'memory_queried',
  'memory_validation_failed',
  'memory_retrieval_result',
] as const satisfies readonly KnownEventKind[];

/** The known kinds without a snapshot effect. */
export const NON_SNAPSHOT_KNOWN_KINDS: readonly KnownEventKind[] = KNOWN_EVENT_KIND_LIST.filter(
  (kind) => !(SNAPSHOT_KINDS as readonly string[]).includes(kind),
);

/** Kinds newer SDKs write, named by the spec or plausible; none is known to this version. */
export const UNKNOWN_KIND_POOL = [
  'workflow_completed',
  'summary_upgraded',
  'group_budget_charged',
  'agent_process_forked',
  'signal_received',
  'suspended_v2',
  'constructor',
] as const;

/** A kind the contract does not name: from {@link UNKNOWN_KIND_POOL} or a random snake_case word. */
export function arbitraryUnknownKind(): fc.Arbitrary<string> {
  const word = fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz'), minLength: 1, maxLength: 8 });
  const generated = fc
    .tuple(word, fc.array(fc.oneof(word, fc.nat(99).map(String)), { maxLength: 2 }))
    .map(([head, tail]) => [head, ...tail].join('_'))
    .filter((kind) => !KNOWN_EVENT_KINDS.has(kind));
  return fc.oneof({ arbitrary: fc.constantFrom(...UNKNOWN_KIND_POOL), weight: 3 }, { arbitrary: generated, weight: 1 });
}

// ---------------------------------------------------------------------------------------------
// Scalars

export const U32_MAX = 4_294_967_295;
export const U64_MAX = 2n ** 64n - 1n;

/** A u32, mostly a realistic turn or count, sometimes a boundary (0, 2^31, 2^32-1…). */
export function arbitraryU32(): fc.Arbitrary<number> {
  return fc.oneof(
    { arbitrary: fc.integer({ min: 0, max: 30 }), weight: 12 },
    { arbitrary: fc.integer({ min: 0, max: 100_000 }), weight: 2 },
    { arbitrary: fc.integer({ min: 0, max: U32_MAX }), weight: 1 },
    { arbitrary: fc.constantFrom(0, 2 ** 31 - 1, 2 ** 31, U32_MAX - 1, U32_MAX), weight: 1 },
  );
}

/**
 * A u64 as {@link JsonValue} holds it: a `number` while safe, a `bigint` from 2^53 on (up to
 * 2^64-1). Mostly small; sometimes at the 2^53 border or above it.
 */
export function arbitraryU64(): fc.Arbitrary<number | bigint> {
  return fc.oneof(
    { arbitrary: fc.integer({ min: 0, max: 1_000 }), weight: 10 },
    { arbitrary: fc.maxSafeNat(), weight: 1 },
    { arbitrary: fc.constant(Number.MAX_SAFE_INTEGER), weight: 1 },
    { arbitrary: fc.bigInt({ min: 2n ** 53n, max: U64_MAX }), weight: 2 },
    { arbitrary: fc.constantFrom(2n ** 53n, 2n ** 53n + 1n, 2n ** 63n, U64_MAX), weight: 1 },
  );
}

const TRICKY_STRINGS = [
  '',
  ' ',
  'line\nbreak',
  'tab\there',
  'quote"inside',
  'back\\slash',
  'ünïcödé',
  'e\u0301', // decomposed é
  '😀 emoji',
  '\u2028\u2029',
  '<script>',
  "it's",
  '{"not": "json object"}',
];

const HOSTILE_STRINGS = ['nul\u0000byte', '\u0000', 'lone\ud800surrogate', '\udfff'];

/** Free text: realistic words, tricky escapes, random Unicode. */
function arbitraryText(o: Options): fc.Arbitrary<string> {
  const parts: fc.WeightedArbitrary<string>[] = [
    { arbitrary: fc.string({ unit: 'grapheme-ascii', maxLength: 12 }), weight: 4 },
    { arbitrary: fc.string({ unit: 'grapheme', maxLength: 8 }), weight: 2 },
    { arbitrary: fc.constantFrom(...TRICKY_STRINGS), weight: 2 },
  ];
  if (o.hostileStrings) {
    parts.push({ arbitrary: fc.constantFrom(...HOSTILE_STRINGS), weight: 1 });
  }
  return fc.oneof(...parts);
}

/** Mostly one of the realistic values, sometimes free text. */
function pooled(pool: readonly string[], o: Options): fc.Arbitrary<string> {
  return fc.oneof({ arbitrary: fc.constantFrom(...pool), weight: 5 }, { arbitrary: arbitraryText(o), weight: 1 });
}

/** Small pools, so that ids repeat inside a log. Hostile ids included on purpose. */
export const AGENT_ID_POOL = ['child-1', 'child-2', 'worker-3', '__proto__', 'constructor', 'agënt/✓', ''] as const;
export const SIGNAL_ID_POOL = ['sig-a', 'sig-b', 'sig-c', 'toString'] as const;
export const CALL_ID_POOL = ['c1', 'c2', 'call_01HXYZ', 'child-1'] as const;
export const SESSION_ID_POOL = ['parent', 'session-0', 'root'] as const;
export const STATE_POOL = ['running', 'joined', 'failed'] as const;
export const DISPOSITION_POOL = ['ignore', 'observe', 'queue', 'run', 'interrupt', 'interrupt_now', 'dropped'] as const;
export const SUSPEND_REASON_POOL = ['ask_user', 'sub_agent_await', 'budget'] as const;
export const BUDGET_POOL = ['tokens', 'turns', 'wall_clock', 'cost_usd'] as const;
const MEMORY_ID_POOL = ['mem-1', 'mem-2', 'mem-3'] as const;
const TOOL_POOL = ['read_file', 'write_file', 'shell', 'needs_approval'] as const;

/** A small pool-based id, sometimes free text. */
function id(pool: readonly string[], o: Options): fc.Arbitrary<string> {
  return fc.oneof({ arbitrary: fc.constantFrom(...pool), weight: 9 }, { arbitrary: arbitraryText(o), weight: 1 });
}

function stringArray(item: fc.Arbitrary<string>): fc.Arbitrary<string[]> {
  return fc.array(item, { maxLength: 3 });
}

// ---------------------------------------------------------------------------------------------
// Free-form JSON

const JSON_KEY_POOL = ['role', 'content', 'id', 'type', 'value', 'text', 'n', '__proto__', 'constructor', '', 'ключ'];

/** A JSON float as `parseJson` keeps it: its source text (always with a `.` or an exponent). */
export function arbitraryJsonFloat(): fc.Arbitrary<JsonFloat> {
  return fc.oneof(
    fc.constantFrom('0.5', '1.0', '-2.25', '1e3', '6.02E23', '-0.0', '1.5e-7', '123456789012345678901234.5'),
    fc
      .double({ noNaN: true, noDefaultInfinity: true })
      .map((d) => String(d))
      .filter((text) => Number.isFinite(Number(text)))
      .map((text) => (/[.eE]/.test(text) ? text : `${text}.0`)),
  ).map((text) => new JsonFloat(text));
}

/**
 * Any JSON value (bounded depth): null, booleans, integers (bigint beyond 2^53, negatives
 * included), floats (if allowed), strings, arrays, objects.
 */
export function arbitraryJsonValue(options?: ArbitraryEventOptions): fc.Arbitrary<JsonValue> {
  return jsonValue(resolve(options), 2);
}

function jsonValue(o: Options, depth: number): fc.Arbitrary<JsonValue> {
  const scalars: fc.WeightedArbitrary<JsonValue>[] = [
    { arbitrary: fc.constant(null), weight: 1 },
    { arbitrary: fc.boolean(), weight: 1 },
    { arbitrary: fc.integer({ min: -1_000, max: 1_000 }), weight: 2 },
    // beyond the safe integers, on either side: parseJson keeps them as bigint
    {
      arbitrary: fc
        .tuple(fc.boolean(), fc.bigInt({ min: 2n ** 53n, max: 2n ** 70n }))
        .map(([negative, n]) => (negative ? -n : n)),
      weight: 1,
    },
    { arbitrary: arbitraryText(o), weight: 3 },
  ];
  if (o.floats) {
    scalars.push({ arbitrary: arbitraryJsonFloat(), weight: 1 });
  }
  if (depth <= 0) {
    return fc.oneof(...scalars);
  }
  return fc.oneof(
    ...scalars,
    { arbitrary: fc.array(jsonValue(o, depth - 1), { maxLength: 3 }), weight: 1 },
    { arbitrary: jsonObject(o, depth - 1), weight: 2 },
  );
}

function jsonObject(o: Options, depth: number): fc.Arbitrary<JsonObject> {
  const key = fc.oneof({ arbitrary: fc.constantFrom(...JSON_KEY_POOL), weight: 3 }, { arbitrary: arbitraryText(o), weight: 1 });
  return fc
    .uniqueArray(fc.tuple(key, jsonValue(o, depth)), { maxLength: 4, selector: ([k]) => k })
    .map((entries) => Object.fromEntries(entries) as JsonObject);
}

// ---------------------------------------------------------------------------------------------
// Events

/** How a field of an event is written. */
type Field =
  | { mode: 'required'; value: fc.Arbitrary<JsonValue> }
  /** *opt*: missing, `null`, or a value. */
  | { mode: 'opt'; value: fc.Arbitrary<JsonValue> }
  /** *default*, and `agent_process_changed.state`: missing or a value. */
  | { mode: 'default'; value: fc.Arbitrary<JsonValue> };

const required = (value: fc.Arbitrary<JsonValue>): Field => ({ mode: 'required', value });
const opt = (value: fc.Arbitrary<JsonValue>): Field => ({ mode: 'opt', value });
const dflt = (value: fc.Arbitrary<JsonValue>): Field => ({ mode: 'default', value });

const ABSENT = Symbol('absent');

function fieldEntry(name: string, field: Field, o: Options): fc.Arbitrary<[string, JsonValue] | typeof ABSENT> {
  const present = field.value.map((v): [string, JsonValue] => [name, v]);
  if (field.mode === 'required' || !o.omitDefaults) {
    return present;
  }
  const variants: fc.WeightedArbitrary<[string, JsonValue] | typeof ABSENT>[] = [
    { arbitrary: present, weight: 3 },
    { arbitrary: fc.constant(ABSENT), weight: 1 },
  ];
  if (field.mode === 'opt') {
    variants.push({ arbitrary: fc.constant<[string, JsonValue]>([name, null]), weight: 1 });
  }
  return fc.oneof(...variants);
}

/** Extra field names: none is a field of any kind of the contract. */
export const EXTRA_FIELD_POOL = ['sdk_version', 'trace_id', 'x_meta', 'timestamp_ms', '__proto__', 'constructor', 'zürich', ''] as const;

/** Field names the snapshot reads: unknown kinds carry them to prove they are ignored. */
const SNAPSHOT_FIELD_NAMES = ['turn', 'agent_id', 'parent_session_id', 'state', 'signal_id', 'disposition', 'queue_depth', 'budget', 'reason', 'pending_calls'];

function extras(o: Options, names: readonly string[]): fc.Arbitrary<[string, JsonValue][]> {
  if (!o.extraFields) {
    return fc.constant<[string, JsonValue][]>([]);
  }
  return fc.oneof(
    { arbitrary: fc.constant<[string, JsonValue][]>([]), weight: 4 },
    {
      arbitrary: fc.uniqueArray(fc.tuple(fc.constantFrom(...names), jsonValue(o, 1)), {
        minLength: 1,
        maxLength: 3,
        selector: ([k]) => k,
      }),
      weight: 1,
    },
  );
}

function event(kind: string, fields: Record<string, Field>, o: Options): fc.Arbitrary<WireEvent> {
  const names = Object.keys(fields);
  const entries = names.map((name) => fieldEntry(name, fields[name]!, o));
  return fc.tuple(fc.tuple(...entries), extras(o, EXTRA_FIELD_POOL)).map(([own, extra]) => {
    const present = own.filter((e): e is [string, JsonValue] => e !== ABSENT);
    return Object.fromEntries([['kind', kind], ...present, ...extra]) as WireEvent;
  });
}

function memoryRetrieval(o: Options): { ids: fc.Arbitrary<JsonValue>; rationale: fc.Arbitrary<JsonValue> } {
  return { ids: stringArray(id(MEMORY_ID_POOL, o)), rationale: arbitraryText(o) };
}

function knownEvent(kind: KnownEventKind, o: Options): fc.Arbitrary<WireEvent> {
  const turn = required(arbitraryU32());
  const u32 = arbitraryU32();
  const text = arbitraryText(o);
  const strings = stringArray(text);
  const object = jsonObject(o, 2);
  // The fields the snapshot reads never hold strings PostgreSQL cannot store (the validator
  // refuses them there), whatever `hostileStrings` says.
  const so: Options = { ...o, hostileStrings: false };
  switch (kind) {
    case 'run_started':
      return event(kind, {
        run_id: required(id(['run-1', 'run-2'], o)),
        goal: required(text),
        criteria: dflt(strings),
        agent_id: opt(id(AGENT_ID_POOL, o)),
        system_prompt: opt(text),
      }, o);
    case 'llm_completed':
      return event(kind, {
        turn,
        message: required(
          fc.tuple(fc.constantFrom('assistant', 'user'), text, jsonObject(o, 1)).map(
            ([role, content, rest]) => Object.fromEntries([...Object.entries(rest), ['role', role], ['content', content]]) as JsonObject,
          ),
        ),
        provider_replay: opt(object),
      }, o);
    case 'tool_requested':
      return event(kind, {
        turn,
        calls: required(
          fc.array(
            fc.record({ id: id(CALL_ID_POOL, o), name: pooled(TOOL_POOL, o), arguments: jsonValue(o, 2) }),
            { maxLength: 3 },
          ),
        ),
      }, o);
    case 'tool_completed':
      return event(kind, { turn, results: required(fc.array(object, { maxLength: 3 })) }, o);
    case 'run_terminal':
      return event(kind, {
        reason: required(pooled(['completed', 'max_turns', 'error', 'cancelled'], o)),
        turns_used: required(u32),
        total_tokens: required(arbitraryU64()),
      }, o);
    case 'tool_argument_repaired':
      return event(kind, {
        turn,
        tool: required(pooled(TOOL_POOL, o)),
        original_arguments: required(text),
        repaired_arguments: required(text),
      }, o);
    case 'permission_requested':
      return event(kind, {
        turn,
        tool: required(pooled(TOOL_POOL, o)),
        arguments: required(text),
        reason: opt(text),
      }, o);
    case 'permission_resolved':
      return event(kind, { turn, approved: required(fc.boolean()), responder: required(pooled(['user', 'policy'], o)) }, o);
    case 'tool_denied':
      return event(kind, {
        turn,
        call_id: required(id(CALL_ID_POOL, o)),
        tool_name: required(pooled(TOOL_POOL, o)),
        reason: required(text),
      }, o);
    case 'compressed':
      return event(kind, {
        turn,
        archived_seq_range: required(fc.tuple(arbitraryU64(), arbitraryU64())),
        action: opt(pooled(['summarize', 'truncate'], o)),
        summary: opt(text),
        archive_ref: opt(text),
        summary_tokens: opt(u32),
        preserved_refs: dflt(strings),
      }, o);
    case 'page_out':
      return event(kind, {
        turn,
        action: opt(text),
        summary: opt(text),
        tier_hint: opt(pooled(['warm', 'cold'], o)),
        message_count: dflt(u32),
      }, o);
    case 'page_in':
      return event(kind, { turn, entry_count: required(u32) }, o);
    case 'large_result_spooled':
      return event(kind, {
        turn,
        call_id: required(id(CALL_ID_POOL, o)),
        tool: required(pooled(TOOL_POOL, o)),
        original_size: required(u32),
        preview_size: required(u32),
        spool_ref: opt(text),
      }, o);
    case 'capability_changed':
      return event(kind, {
        turn,
        added: dflt(strings),
        removed: dflt(strings),
        change_kind: opt(pooled(['mount', 'unmount'], o)),
        capability_id: opt(text),
        version: opt(text),
        mounted_by: opt(text),
        mount_reason: opt(text),
      }, o);
    case 'context_renewed':
      return event(kind, { turn, sprint: required(u32), handoff_ref: required(text) }, o);
    case 'suspended':
      return event(kind, {
        turn,
        reason: required(pooled(SUSPEND_REASON_POOL, so)),
        pending_calls: dflt(stringArray(id(CALL_ID_POOL, so))),
      }, o);
    case 'resumed':
      return event(kind, {
        turn,
        approved: dflt(stringArray(id(CALL_ID_POOL, o))),
        denied: dflt(stringArray(id(CALL_ID_POOL, o))),
      }, o);
    case 'tool_gated':
      return event(kind, {
        turn,
        call_id: required(id(CALL_ID_POOL, o)),
        tool: required(pooled(TOOL_POOL, o)),
        reason: required(pooled(SUSPEND_REASON_POOL, o)),
      }, o);
    case 'signal_disposed':
      return event(kind, {
        turn,
        signal_id: required(id(SIGNAL_ID_POOL, so)),
        disposition: required(pooled(DISPOSITION_POOL, so)),
        queue_depth: required(u32),
      }, o);
    case 'budget_exceeded':
      return event(kind, { turn, budget: required(pooled(BUDGET_POOL, so)) }, o);
    case 'checkpoint_taken':
      return event(kind, { turn, history_len: required(u32) }, o);
    case 'rollbacked':
      return event(kind, {
        turn,
        checkpoint_history_len: required(u32),
        reason: opt(
          fc.tuple(fc.constantFrom('user_requested', 'validation_failed', 'budget'), fc.option(text, { nil: undefined })).map(
            ([reasonKind, detail]) =>
              (detail === undefined ? { kind: reasonKind } : { kind: reasonKind, detail }) as JsonObject,
          ),
        ),
      }, o);
    case 'agent_process_changed':
      return event(kind, {
        turn,
        agent_id: required(id(AGENT_ID_POOL, so)),
        parent_session_id: required(id(SESSION_ID_POOL, so)),
        role: required(pooled(['worker', 'reviewer', 'planner'], so)),
        isolation: required(pooled(['shared', 'readonly', 'systemonly'], so)),
        context_inheritance: required(pooled(['none', 'full', 'systemonly'], so)),
        state: dflt(pooled(STATE_POOL, so)),
        permitted_capability_ids: dflt(stringArray(arbitraryText(so))),
        result_termination: opt(pooled(['completed', 'failed', 'cancelled'], so)),
      }, o);
    case 'milestone_advanced':
      return event(kind, { turn, phase_id: required(text), capabilities_unlocked: dflt(strings) }, o);
    case 'milestone_blocked':
      return event(kind, { turn, phase_id: required(text), reason: required(text) }, o);
    case 'memory_written':
      return event(kind, {
        turn,
        memory_id: required(id(MEMORY_ID_POOL, o)),
        memory_kind: required(pooled(['fact', 'episode', 'preference'], o)),
        size_bytes: required(u32),
      }, o);
    case 'memory_queried':
      return event(kind, {
        turn,
        query_context: required(text),
        requested_k: required(arbitraryU64()),
        requires_async_response: required(fc.boolean()),
      }, o);
    case 'memory_validation_failed':
      return event(kind, { turn, memory_id: required(id(MEMORY_ID_POOL, o)), error: required(text) }, o);
    case 'memory_retrieval_result': {
      const { ids, rationale } = memoryRetrieval(o);
      // The Rust runtime nests the retrieval; the Node SDK writes its fields flat: both valid.
      const nested = event(kind, {
        retrieval: required(
          fc.tuple(ids, rationale).map(
            ([selected, why]) => ({ selected_memory_ids: selected, selection_rationale: why }) as JsonObject,
          ),
        ),
      }, o);
      const flat = event(kind, { selected_memory_ids: required(ids), selection_rationale: required(rationale) }, o);
      return fc.oneof(nested, flat);
    }
    default:
      throw new Error(`no arbitrary for kind ${JSON.stringify(kind satisfies never)}`);
  }
}

/**
 * An event of a kind the contract does not name: valid with a `kind` only; it sometimes
 * carries fields named like the snapshot's (`turn`, `agent_id`, `state`…) with any JSON
 * value, which the snapshot must ignore.
 */
function unknownEvent(kind: fc.Arbitrary<string>, o: Options): fc.Arbitrary<WireEvent> {
  const fields = fc.uniqueArray(
    fc.tuple(
      fc.constantFrom(...SNAPSHOT_FIELD_NAMES, ...EXTRA_FIELD_POOL),
      fc.oneof(arbitraryU32(), id(AGENT_ID_POOL, o), jsonValue(o, 1)),
    ),
    { maxLength: o.extraFields ? 4 : 0, selector: ([k]) => k },
  );
  return fc.tuple(kind, fields).map(([k, rest]) => Object.fromEntries([['kind', k], ...rest]) as WireEvent);
}

function kindWeight(kind: KnownEventKind): number {
  if (kind === 'agent_process_changed') return 3;
  return (SNAPSHOT_KINDS as readonly string[]).includes(kind) ? 2 : 1;
}

/**
 * One valid wire event. By default: any of the 29 known kinds (those the snapshot reads
 * twice as likely, `agent_process_changed` three times) or, one time in ~15, a kind the
 * contract does not name.
 *
 * @example
 * ```ts
 * fc.sample(arbitraryEvent({ kinds: ['agent_process_changed'], omitDefaults: false }), 1);
 * ```
 */
export function arbitraryEvent(options?: ArbitraryEventOptions): fc.Arbitrary<WireEvent> {
  const o = resolve(options);
  if (o.kinds !== undefined) {
    if (o.kinds.length === 0) {
      throw new Error('arbitraryEvent: kinds must not be empty');
    }
    return fc.oneof(
      ...o.kinds.map((kind) =>
        KNOWN_EVENT_KINDS.has(kind) ? knownEvent(kind as KnownEventKind, o) : unknownEvent(fc.constant(kind), o),
      ),
    );
  }
  // Kinds the snapshot reads come twice as often, process changes three times (upserts).
  const known = fc.oneof(
    ...KNOWN_EVENT_KIND_LIST.map((kind) => ({ arbitrary: knownEvent(kind, o), weight: kindWeight(kind) })),
  );
  if (!o.unknownKinds) {
    return known;
  }
  return fc.oneof({ arbitrary: known, weight: 14 }, { arbitrary: unknownEvent(arbitraryUnknownKind(), o), weight: 1 });
}

/** Options of {@link arbitrarySessionLog}: those of the events, and the log's length. */
export interface ArbitrarySessionLogOptions extends ArbitraryEventOptions {
  /** Default 0. */
  minLength?: number;
  /** Default 200. */
  maxLength?: number;
  /**
   * fast-check's size of the array (how long logs tend to be). Default `'max'`: lengths spread
   * over the whole 0..maxLength range (fast-check's own default would keep logs under ~10).
   */
  size?: fc.SizeForArbitrary;
}

/** A session log: an array of 0..200 valid wire events, in `seq` order. */
export function arbitrarySessionLog(options?: ArbitrarySessionLogOptions): fc.Arbitrary<WireEvent[]> {
  return fc.array(arbitraryEvent(options), {
    minLength: options?.minLength ?? 0,
    maxLength: options?.maxLength ?? 200,
    size: options?.size ?? 'max',
  });
}

/**
 * An event the OS snapshot ignores: a known kind without a snapshot effect, or (one time in
 * four) a kind the contract does not name, possibly carrying snapshot-like fields.
 */
export function arbitraryNonSnapshotEvent(options?: Omit<ArbitraryEventOptions, 'kinds' | 'unknownKinds'>): fc.Arbitrary<WireEvent> {
  const o = resolve(options);
  return fc.oneof(
    { arbitrary: arbitraryEvent({ ...options, kinds: NON_SNAPSHOT_KNOWN_KINDS }), weight: 3 },
    { arbitrary: unknownEvent(arbitraryUnknownKind(), o), weight: 1 },
  );
}
