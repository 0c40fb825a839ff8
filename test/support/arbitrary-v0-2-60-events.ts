/**
 * fast-check arbitraries of session events for the v0.2.60 snapshot
 * (`projections/os-snapshot-v0-2-60`). The kinds it reads are shaped from its own reads: each
 * field's type and what a missing one reads as. The kinds it counts and kinds it ignores come
 * with any fields. Optional fields are sometimes missing or `null`, `whenTyped` ones sometimes
 * of another type. With `unreadable`, an event now and then has a field the projection cannot
 * read (missing, `null`, of another type, out of range, a string SQL text cannot hold).
 *
 * @example
 * ```ts
 * fc.assert(fc.property(arbitraryV0260Log({ unreadable: true }), (log) => { … }));
 * ```
 */
import fc from 'fast-check';
import { JsonFloat, type JsonObject, type JsonValue } from '../../src/json/json-value.js';
import type { EventReads, FieldRead } from '../../src/projector/event-reads.js';
import { OS_SNAPSHOT_V0_2_60_COUNTERS, OS_SNAPSHOT_V0_2_60_READS } from '../../projections/os-snapshot-v0-2-60/os-snapshot-v0-2-60-reads.js';
import {
  AGENT_ID_POOL,
  arbitraryJsonValue,
  arbitraryU32,
  arbitraryU64,
  BUDGET_POOL,
  CALL_ID_POOL,
  DISPOSITION_POOL,
  EXTRA_FIELD_POOL,
  SESSION_ID_POOL,
  SIGNAL_ID_POOL,
  STATE_POOL,
  SUSPEND_REASON_POOL,
  U64_MAX,
  type WireEvent,
} from './arbitrary-events.js';

export interface ArbitraryV0260Options {
  /** Now and then an event of a kind the projection reads that it cannot read. Default false. */
  unreadable?: boolean;
  /**
   * Only what the v0.2.60 Node SDK's own fold (`rebuildOsSnapshotFromSessionEvents`) folds as
   * the Rust core does. No empty `reservation_id` or `parent_session_id`: it drops a falsy one.
   * `tokens` a safe integer: it reads a JSON number. `pending_call_ids` always a list: it keeps
   * a missing one missing. Default false.
   */
  sdkComparable?: boolean;
}

const OPERATION_ID_POOL = ['op-1', 'op-2', 'op β/unicode', ''] as const;
const RESERVATION_ID_POOL = ['res-1', 'res-2', ''] as const;
const CANCELLATION_REASON_POOL = ['user', 'deadline', 'lease_lost', 'host_shutdown'] as const;
const STRING_POOL = ['quote"inside', 'back\\slash', 'line\nbreak', 'ünïcödé', '😀', ''] as const;

/** The reads, by any kind name. */
const READS: EventReads = OS_SNAPSHOT_V0_2_60_READS;

/** A string from `pool`, sometimes one of the tricky ones or a random one; never `excluded`. */
function text(pool: readonly string[], excluded: readonly string[] = []): fc.Arbitrary<string> {
  return fc
    .oneof(
      { arbitrary: fc.constantFrom(...pool), weight: 8 },
      { arbitrary: fc.constantFrom(...STRING_POOL), weight: 1 },
      { arbitrary: fc.string({ unit: 'grapheme', maxLength: 6 }), weight: 1 },
    )
    .filter((value) => !excluded.includes(value));
}

/** The value of a readable field, by `kind.field` or `field`, else by its type. */
function fieldValue(kind: string, name: string, read: FieldRead, o: Required<ArbitraryV0260Options>): fc.Arbitrary<JsonValue> {
  // The SDK's fold drops an empty reservation_id or parent_session_id (see `sdkComparable`).
  const droppedBySdk = o.sdkComparable ? [''] : [];
  const list = (pool: readonly string[]) => fc.array(text(pool), { maxLength: 3 });
  switch (`${kind}.${name}`) {
    case 'suspended.reason':
      return text(SUSPEND_REASON_POOL);
    case 'operation_cancelled.reason':
      return text(CANCELLATION_REASON_POOL);
    case 'budget_exceeded.reservation_id':
      return text(RESERVATION_ID_POOL, droppedBySdk);
  }
  switch (name) {
    case 'tokens':
      return o.sdkComparable ? fc.oneof(fc.integer({ min: 0, max: 100_000 }), fc.maxSafeNat()) : arbitraryU64();
    case 'agent_id':
      return text(AGENT_ID_POOL);
    case 'parent_session_id':
      return text(SESSION_ID_POOL, droppedBySdk);
    case 'state':
      return text(STATE_POOL);
    case 'operation_id':
      return text(OPERATION_ID_POOL);
    case 'reservation_id':
      return text(RESERVATION_ID_POOL);
    case 'delivery_id':
      return text(['delivery-1', 'delivery-2']);
    case 'signal_id':
      return text(SIGNAL_ID_POOL);
    case 'disposition':
      return text(DISPOSITION_POOL);
    case 'budget':
      return text(BUDGET_POOL);
    case 'pending_calls':
    case 'pending_call_ids':
      return list(CALL_ID_POOL);
  }
  switch (read.type) {
    case 'u32':
      return arbitraryU32();
    case 'u64':
      return arbitraryU64();
    case 'string':
      return text(['task-1', 'worker', 'shared', 'completed']);
    case 'strings':
      return list(['cap-1', 'cap-2']);
  }
}

/** A value that is not of the field's type, or out of its range, or a string SQL text cannot hold. */
function unreadableValue(read: FieldRead): fc.Arbitrary<JsonValue> {
  const unstorable = fc.constantFrom('nul\u0000byte', 'lone\ud800surrogate');
  switch (read.type) {
    case 'u32':
      return fc.constantFrom<JsonValue>(-1, 4_294_967_296, new JsonFloat('1.5'), new JsonFloat('3.0'), '3', true, []);
    case 'u64':
      return fc.constantFrom<JsonValue>(-1, U64_MAX + 1n, -(2n ** 60n), new JsonFloat('1.0'), new JsonFloat('1e3'), '5', {});
    case 'string':
      return fc.oneof(fc.constantFrom<JsonValue>(5, [], {}, false), unstorable);
    case 'strings':
      return fc.oneof(fc.constantFrom<JsonValue>('c1', [1], ['c1', null], {}), unstorable.map((bad) => ['c1', bad]));
  }
}

/** How a field is written: present, or (as its read allows) missing, `null` or of another type. */
function fieldEntry(kind: string, name: string, read: FieldRead, o: Required<ArbitraryV0260Options>): fc.Arbitrary<[string, JsonValue] | null> {
  const present = fieldValue(kind, name, read, o).map((value): [string, JsonValue] => [name, value]);
  // Required, or a list the SDK's fold would keep missing (see `sdkComparable`): always written.
  if (read.whenMissing === 'unreadable' || (o.sdkComparable && name === 'pending_call_ids')) return present;
  const variants: fc.WeightedArbitrary<[string, JsonValue] | null>[] = [
    { arbitrary: present, weight: 4 },
    { arbitrary: fc.constant(null), weight: 1 },
    { arbitrary: fc.constant<[string, JsonValue]>([name, null]), weight: 1 },
  ];
  if (read.lenient) variants.push({ arbitrary: unreadableValue(read).map((value): [string, JsonValue] => [name, value]), weight: 1 });
  return fc.oneof(...variants);
}

/** Extra fields the projection never looks at. */
const extras = fc.oneof(
  { arbitrary: fc.constant<[string, JsonValue][]>([]), weight: 5 },
  { arbitrary: fc.uniqueArray(fc.tuple(fc.constantFrom(...EXTRA_FIELD_POOL), arbitraryJsonValue()), { maxLength: 2, selector: ([key]) => key }), weight: 1 },
);

/** An event of a kind the projection reads, readable. */
function readableEvent(kind: string, o: Required<ArbitraryV0260Options>): fc.Arbitrary<WireEvent> {
  const fields = Object.entries(READS[kind]!);
  return fc
    .tuple(fc.tuple(...fields.map(([name, read]) => fieldEntry(kind, name, read, o))), extras)
    .map(([own, extra]) => Object.fromEntries([['kind', kind], ...own.filter((entry) => entry !== null), ...extra]) as WireEvent);
}

/** An event of a kind the projection reads with one field it cannot read: missing, `null`, or a bad value. */
function unreadableEvent(kind: string, o: Required<ArbitraryV0260Options>): fc.Arbitrary<WireEvent> {
  const fields = Object.entries(READS[kind]!).filter(([, read]) => !read.lenient);
  return fc
    .tuple(readableEvent(kind, o), fc.constantFrom(...fields), fc.nat(2))
    .chain(([event, [name, read], how]) => {
      const required = read.whenMissing === 'unreadable';
      if (how === 0 && required) return fc.constant(withField(event, name, undefined));
      if (how === 1 && required) return fc.constant(withField(event, name, null));
      return unreadableValue(read).map((value) => withField(event, name, value));
    });
}

/** `event` with `name` set to `value`, or left out. */
function withField(event: WireEvent, name: string, value: JsonValue | undefined): WireEvent {
  const copy: JsonObject = Object.fromEntries(Object.entries(event).filter(([key]) => key !== name));
  if (value !== undefined) copy[name] = value;
  return copy as WireEvent;
}

/**
 * An event the projection counts or ignores, with any fields, some named like the ones it reads
 * (which must change nothing): the seven counted kinds, the seed's `signal_disposed`, other kinds.
 */
function otherEvent(): fc.Arbitrary<WireEvent> {
  const kind = fc.constantFrom(...Object.values(OS_SNAPSHOT_V0_2_60_COUNTERS), 'signal_disposed', 'llm_completed', 'kernel_observation', 'toString');
  const names = fc.constantFrom('turn', 'operation_id', 'tokens', 'reason', 'agent_id', 'signal_id', 'queue_depth', ...EXTRA_FIELD_POOL);
  const fields = fc.uniqueArray(fc.tuple(names, fc.oneof(arbitraryU32(), arbitraryJsonValue())), { maxLength: 4, selector: ([key]) => key });
  return fc.tuple(kind, fields).map(([k, rest]) => Object.fromEntries([['kind', k], ...rest]) as WireEvent);
}

/**
 * One event: of a kind the projection reads most of the time (readable, or now and then not with
 * `unreadable`), else of a kind it counts or ignores.
 *
 * @example
 * ```ts
 * fc.sample(arbitraryV0260Event({ sdkComparable: true }), 3);
 * ```
 */
export function arbitraryV0260Event(options: ArbitraryV0260Options = {}): fc.Arbitrary<WireEvent> {
  const o = { unreadable: false, sdkComparable: false, ...options };
  const kinds = Object.keys(READS);
  const readable = fc.oneof(...kinds.map((kind) => readableEvent(kind, o)));
  const variants: fc.WeightedArbitrary<WireEvent>[] = [
    { arbitrary: readable, weight: 30 },
    { arbitrary: otherEvent(), weight: 10 },
  ];
  if (o.unreadable) variants.push({ arbitrary: fc.oneof(...kinds.map((kind) => unreadableEvent(kind, o))), weight: 2 });
  return fc.oneof(...variants);
}

/**
 * A session log of 0..`maxLength` events of {@link arbitraryV0260Event}.
 *
 * @example
 * ```ts
 * fc.sample(arbitraryV0260Log({ maxLength: 20, unreadable: true }), 1);
 * ```
 */
export function arbitraryV0260Log(options: ArbitraryV0260Options & { maxLength?: number } = {}): fc.Arbitrary<WireEvent[]> {
  return fc.array(arbitraryV0260Event(options), { maxLength: options.maxLength ?? 40, size: 'max' });
}
