/**
 * The declarative schema of the 29 kinds of the wire contract
 * (`shared/spec/session-events.md`, sections 1 and 2).
 *
 * {@link EVENT_SCHEMA} is a table of field specs per kind, written with the small vocabulary
 * below (`u32`, `u64`, `str`, `bool`, `stringList`, …). Its type, {@link EventSchema}, is
 * derived from the interfaces of `session-event.ts`, so the compiler checks the table. It
 * refuses a table that forgets a field or names a field the interface does not have. It also
 * refuses a spec of another value type, and an optional (`?`) field marked required or the
 * reverse.
 *
 * The validator does not walk this table for every event: {@link COMPILED_KINDS} holds, per
 * kind, the precomputed list of fields, built once when the module loads.
 *
 * @module
 */

import type { JsonObject, JsonValue } from '../json/json-value.js';
import type {
  KnownEventKind,
  KnownSessionEvent,
  MemoryRetrieval,
  RollbackReason,
  ToolCall,
  U32,
  U64,
} from './session-event.js';
import { KNOWN_EVENT_KIND_LIST } from './session-event.js';

// ---------------------------------------------------------------------------------------------
// Value types: what a field holds, as the validator sees it at run time.
// ---------------------------------------------------------------------------------------------

/** The run-time description of a value; `expected` is the phrase used in error messages. */
export type ValueType =
  | { readonly tag: 'u32'; readonly expected: string; readonly plural: string }
  | { readonly tag: 'u64'; readonly expected: string; readonly plural: string }
  | { readonly tag: 'string'; readonly expected: string; readonly plural: string }
  | { readonly tag: 'bool'; readonly expected: string; readonly plural: string }
  /** Any JSON value, `null` included. */
  | { readonly tag: 'json'; readonly expected: string; readonly plural: string }
  /** Any JSON object. */
  | { readonly tag: 'object'; readonly expected: string; readonly plural: string }
  /** A JSON object with named fields (extra fields allowed). */
  | {
      readonly tag: 'struct';
      readonly expected: string;
      readonly plural: string;
      readonly fields: readonly CompiledField[];
    }
  | { readonly tag: 'array'; readonly expected: string; readonly plural: string; readonly items: ValueType }
  | {
      readonly tag: 'tuple';
      readonly expected: string;
      readonly plural: string;
      readonly items: readonly ValueType[];
    };

/**
 * How a field may be absent:
 * - `required`: must be present; `null` is an error unless the value type accepts it.
 * - `optional` (*opt*): may be missing or `null`.
 * - `default` (*default*): a missing field takes the default value; `null` is an error
 *   (as serde's `#[serde(default)]` on a `Vec`, `u32` or `bool`).
 */
export type Presence = 'required' | 'optional' | 'default';

/** One field of a kind, ready for the validator. */
export interface CompiledField {
  readonly name: string;
  readonly type: ValueType;
  readonly presence: Presence;
  /** The OS audit snapshot reads this field: its strings must be storable in PostgreSQL. */
  readonly snapshot: boolean;
  /** Makes the value a missing *default* field takes (a fresh array each time); else null. */
  readonly makeDefault: (() => unknown) | null;
}

// ---------------------------------------------------------------------------------------------
// Field specs: the typed vocabulary of the table.
// ---------------------------------------------------------------------------------------------

/**
 * The spec of a field that holds a `T`. `T` is a phantom type parameter, held invariantly,
 * so that the compiler can match each spec against the interface's field type.
 */
export class FieldSpec<T, P extends Presence = 'required'> {
  /** Type-only: makes `T` invariant. Never set at run time. */
  declare readonly valueType: (value: T) => T;

  constructor(
    readonly type: ValueType,
    readonly presence: P,
    readonly isSnapshot: boolean,
    /** The default of a *default* field (or the empty value of the type, before `withDefault`). */
    private readonly defaultFactory: (() => T) | null,
  ) {}

  /** *opt*: the field may be missing or `null`. */
  optional(): FieldSpec<T, 'optional'> {
    return new FieldSpec<T, 'optional'>(this.type, 'optional', this.isSnapshot, null);
  }

  /**
   * *default*: a missing field takes `value`, or without it the type's empty value (`[]`,
   * `0`, `false`); `null` stays an error.
   */
  withDefault(value?: T): FieldSpec<T, 'default'> {
    let factory = this.defaultFactory;
    if (value !== undefined) {
      if (typeof value === 'object' && value !== null) {
        throw new Error('withDefault: only a scalar default may be given; lists default to []');
      }
      factory = () => value;
    }
    if (factory === null) {
      throw new Error(`withDefault: ${this.type.expected} has no empty value; give the default`);
    }
    return new FieldSpec<T, 'default'>(this.type, 'default', this.isSnapshot, factory);
  }

  /** The OS audit snapshot reads this field (its strings must be storable in PostgreSQL). */
  snapshot(): FieldSpec<T, P> {
    return new FieldSpec<T, P>(this.type, this.presence, true, this.defaultFactory);
  }

  /** @internal */
  compile(name: string): CompiledField {
    return {
      name,
      type: this.type,
      presence: this.presence,
      snapshot: this.isSnapshot,
      makeDefault: this.presence === 'default' ? this.defaultFactory : null,
    };
  }
}

function leaf<T>(
  tag: 'u32' | 'u64' | 'string' | 'bool' | 'json' | 'object',
  expected: string,
  plural: string,
  empty: (() => T) | null,
): FieldSpec<T> {
  return new FieldSpec<T>({ tag, expected, plural }, 'required', false, empty);
}

/** An integer in 0..4294967295 (a `number`). Empty value `0`. */
export const u32: FieldSpec<U32> = leaf<U32>('u32', 'a u32', 'u32s', () => 0);
/** An integer in 0..2^64-1 (a `number`, or a `bigint` above 2^53). */
export const u64: FieldSpec<U64> = leaf<U64>('u64', 'a u64', 'u64s', () => 0);
/** A string. */
export const str: FieldSpec<string> = leaf<string>('string', 'a string', 'strings', null);
/** `true` or `false`. Empty value `false`. */
export const bool: FieldSpec<boolean> = leaf<boolean>('bool', 'a boolean', 'booleans', () => false);
/** Any JSON value, `null` included (a required `json` field must still be present). */
export const json: FieldSpec<JsonValue> = leaf<JsonValue>('json', 'a JSON value', 'JSON values', null);
/** Any JSON object. */
export const object: FieldSpec<JsonObject> = leaf<JsonObject>('object', 'an object', 'objects', null);

/** A JSON array whose items all match `items`. Empty value `[]`. */
export function listOf<T>(items: FieldSpec<T, Presence>): FieldSpec<T[]> {
  const type: ValueType = {
    tag: 'array',
    expected: `an array of ${items.type.plural}`,
    plural: `arrays of ${items.type.plural}`,
    items: items.type,
  };
  return new FieldSpec<T[]>(type, 'required', items.isSnapshot, () => []);
}

/** `string[]`. Empty value `[]`. */
export const stringList: FieldSpec<string[]> = listOf(str);

/** A JSON array of exactly two items, `[a, b]`. */
export function pair<A, B>(
  a: FieldSpec<A, Presence>,
  b: FieldSpec<B, Presence>,
): FieldSpec<[A, B]> {
  const what = a.type.plural === b.type.plural ? `2 ${a.type.plural}` : `2 items (${a.type.expected}, ${b.type.expected})`;
  const type: ValueType = {
    tag: 'tuple',
    expected: `an array of exactly ${what}`,
    plural: `arrays of exactly ${what}`,
    items: [a.type, b.type],
  };
  return new FieldSpec<[A, B]>(type, 'required', a.isSnapshot || b.isSnapshot, null);
}

/**
 * A JSON object with the named fields (extra fields allowed), checked against `T`:
 * `struct<ToolCall>({ id: str, name: str, arguments: json })`.
 */
export function struct<T extends JsonObject>(fields: FieldTable<T>): FieldSpec<T> {
  const type: ValueType = {
    tag: 'struct',
    expected: 'an object',
    plural: 'objects',
    fields: compileTable(fields as unknown as Readonly<Record<string, FieldSpec<unknown, Presence>>>),
  };
  return new FieldSpec<T>(type, 'required', false, null);
}

// ---------------------------------------------------------------------------------------------
// Type-level derivation of the table from session-event.ts.
// ---------------------------------------------------------------------------------------------

/** The declared keys of `T`, without its index signature. */
type DeclaredKeys<T> = keyof {
  [K in keyof T as string extends K ? never : number extends K ? never : K]: 0;
};

/**
 * One spec per declared field of `T` (minus `Skip`): an optional property (`?`) needs an
 * *opt* spec of its non-null type; any other property a required or *default* spec of
 * exactly its type.
 */
export type FieldTable<T, Skip extends PropertyKey = never> = {
  readonly [K in Exclude<DeclaredKeys<T>, Skip>]-?: {} extends Pick<T, K>
    ? FieldSpec<Exclude<T[K], null | undefined>, 'optional'>
    : FieldSpec<T[K], 'required' | 'default'>;
};

/** The interface of one kind. */
export type EventOf<K extends KnownEventKind> = Extract<KnownSessionEvent, { kind: K }>;

/**
 * A kind whose interface is a union of two shapes, told apart by whether `key` is present
 * (`memory_retrieval_result`: nested under `retrieval`, or flat on the event).
 */
export interface ShapeSchema<E, Key extends string> {
  readonly shapeKey: Key;
  /** The fields when `shapeKey` is present (not missing; `null` counts as present). */
  readonly whenPresent: FieldTable<Extract<E, Record<Key, unknown>>, 'kind'>;
  /** The fields when `shapeKey` is missing. */
  readonly whenMissing: FieldTable<Exclude<E, Record<Key, unknown>>, 'kind'>;
}

/** The kinds whose interface is a union of shapes. */
type ShapedKind = 'memory_retrieval_result';

/** The schema of every kind, derived from session-event.ts. */
export type EventSchema = {
  readonly [K in KnownEventKind]: K extends ShapedKind
    ? ShapeSchema<EventOf<K>, 'retrieval'>
    : FieldTable<EventOf<K>, 'kind'>;
};

// ---------------------------------------------------------------------------------------------
// The table.
// ---------------------------------------------------------------------------------------------

const toolCall = struct<ToolCall>({ id: str, name: str, arguments: json });
const rollbackReason = struct<RollbackReason>({ kind: str });
const memoryRetrieval = struct<MemoryRetrieval>({ selected_memory_ids: stringList, selection_rationale: str });

/**
 * The fields of every kind (section 2 of the contract). `.snapshot()` marks the fields the
 * OS audit snapshot reads (besides `kind`, which every event's snapshot effect depends on).
 */
export const EVENT_SCHEMA: EventSchema = {
  run_started: {
    run_id: str,
    goal: str,
    criteria: stringList.withDefault(),
    agent_id: str.optional(),
    system_prompt: str.optional(),
  },
  llm_completed: { turn: u32, message: object, provider_replay: object.optional() },
  tool_requested: { turn: u32, calls: listOf(toolCall) },
  tool_completed: { turn: u32, results: listOf(object) },
  run_terminal: { reason: str, turns_used: u32, total_tokens: u64 },
  tool_argument_repaired: { turn: u32, tool: str, original_arguments: str, repaired_arguments: str },
  permission_requested: { turn: u32, tool: str, arguments: str, reason: str.optional() },
  permission_resolved: { turn: u32, approved: bool, responder: str },
  tool_denied: { turn: u32, call_id: str, tool_name: str, reason: str },
  compressed: {
    turn: u32,
    archived_seq_range: pair(u64, u64),
    action: str.optional(),
    summary: str.optional(),
    archive_ref: str.optional(),
    summary_tokens: u32.optional(),
    preserved_refs: stringList.withDefault(),
  },
  page_out: {
    turn: u32,
    action: str.optional(),
    summary: str.optional(),
    tier_hint: str.optional(),
    message_count: u32.withDefault(),
  },
  page_in: { turn: u32, entry_count: u32 },
  large_result_spooled: {
    turn: u32,
    call_id: str,
    tool: str,
    original_size: u32,
    preview_size: u32,
    spool_ref: str.optional(),
  },
  capability_changed: {
    turn: u32,
    added: stringList.withDefault(),
    removed: stringList.withDefault(),
    change_kind: str.optional(),
    capability_id: str.optional(),
    version: str.optional(),
    mounted_by: str.optional(),
    mount_reason: str.optional(),
  },
  context_renewed: { turn: u32, sprint: u32, handoff_ref: str },
  suspended: {
    turn: u32.snapshot(),
    reason: str.snapshot(),
    pending_calls: stringList.snapshot().withDefault(),
  },
  resumed: { turn: u32.snapshot(), approved: stringList.withDefault(), denied: stringList.withDefault() },
  tool_gated: { turn: u32, call_id: str, tool: str, reason: str },
  signal_disposed: {
    turn: u32.snapshot(),
    signal_id: str.snapshot(),
    disposition: str.snapshot(),
    queue_depth: u32.snapshot(),
  },
  budget_exceeded: { turn: u32.snapshot(), budget: str.snapshot() },
  checkpoint_taken: { turn: u32, history_len: u32 },
  rollbacked: { turn: u32, checkpoint_history_len: u32, reason: rollbackReason.optional() },
  agent_process_changed: {
    turn: u32.snapshot(),
    agent_id: str.snapshot(),
    parent_session_id: str.snapshot(),
    role: str.snapshot(),
    isolation: str.snapshot(),
    context_inheritance: str.snapshot(),
    // Contract, section 3: a missing state reads as "running" (the Node and Python SDKs).
    state: str.snapshot().withDefault('running'),
    permitted_capability_ids: stringList.snapshot().withDefault(),
    result_termination: str.snapshot().optional(),
  },
  milestone_advanced: { turn: u32, phase_id: str, capabilities_unlocked: stringList.withDefault() },
  milestone_blocked: { turn: u32, phase_id: str, reason: str },
  memory_written: { turn: u32, memory_id: str, memory_kind: str, size_bytes: u32 },
  memory_queried: { turn: u32, query_context: str, requested_k: u64, requires_async_response: bool },
  memory_validation_failed: { turn: u32, memory_id: str, error: str },
  memory_retrieval_result: {
    shapeKey: 'retrieval',
    whenPresent: { retrieval: memoryRetrieval },
    whenMissing: { selected_memory_ids: stringList, selection_rationale: str },
  },
};

// ---------------------------------------------------------------------------------------------
// The compiled form the validator walks.
// ---------------------------------------------------------------------------------------------

/** A kind with a single shape: its fields in table order, and those with a default. */
export interface CompiledShape {
  readonly fields: readonly CompiledField[];
  readonly defaults: readonly CompiledField[];
}

/** One kind, ready for the validator. */
export interface CompiledKind {
  readonly kind: KnownEventKind;
  /** The kind has a `turn` u32 (all but `run_started`, `run_terminal`, `memory_retrieval_result`). */
  readonly hasTurn: boolean;
  /** When set, the shape is chosen by whether this key is present; else always `whenMissing`. */
  readonly shapeKey: string | null;
  readonly whenPresent: CompiledShape;
  readonly whenMissing: CompiledShape;
}

function compileTable(table: Readonly<Record<string, FieldSpec<unknown, Presence>>>): CompiledField[] {
  return Object.keys(table).map((name) => {
    const spec = table[name];
    if (spec === undefined) throw new Error(`event schema: no spec for ${name}`);
    return spec.compile(name);
  });
}

function compileShape(table: object): CompiledShape {
  const fields = compileTable(table as Readonly<Record<string, FieldSpec<unknown, Presence>>>);
  return { fields, defaults: fields.filter((f) => f.makeDefault !== null) };
}

function compileKind(kind: KnownEventKind): CompiledKind {
  const entry: object = EVENT_SCHEMA[kind];
  let shapeKey: string | null = null;
  let whenPresent: CompiledShape;
  let whenMissing: CompiledShape;
  if ('shapeKey' in entry) {
    const shaped = entry as ShapeSchema<unknown, string>;
    shapeKey = shaped.shapeKey;
    whenPresent = compileShape(shaped.whenPresent);
    whenMissing = compileShape(shaped.whenMissing);
  } else {
    whenPresent = whenMissing = compileShape(entry);
  }
  const all = [...whenPresent.fields, ...whenMissing.fields];
  return {
    kind,
    hasTurn: all.some((f) => f.name === 'turn' && f.type.tag === 'u32' && f.presence === 'required'),
    shapeKey,
    whenPresent,
    whenMissing,
  };
}

/** Every kind of the contract, compiled once: the validator's lookup table. */
export const COMPILED_KINDS: ReadonlyMap<string, CompiledKind> = new Map(
  KNOWN_EVENT_KIND_LIST.map((kind) => [kind, compileKind(kind)] as const),
);
