/**
 * Validation of one event against the wire contract (`shared/spec/session-events.md`,
 * sections 1 and 2), with the rules of the runtime's Rust (serde) decoder.
 *
 * Speed matters: this runs on every ingested event. The per-kind field lists are compiled once
 * in `event-schema.ts`. A first pass checks without building any path or message; only an
 * invalid event is walked a second time to collect every issue with its path.
 *
 * @module
 */

import { describeJsonValue, quoteString } from '../json/describe-json-value.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../json/json-value.js';
import { hasUnstorableChar } from '../json/storable-json.js';
import { isU32, isU64, U32_MAX, U64_MAX } from '../json/unsigned-integers.js';
import { COMPILED_KINDS, type CompiledField, type CompiledShape, type ValueType } from './event-schema.js';
import type { SessionEvent } from './session-event.js';

/** One reason an event is invalid. */
export interface ValidationIssue {
  /**
   * Where: a path such as `turn`, `pending_calls[1]`, `calls[2].name`,
   * `retrieval.selected_memory_ids[0]` or `kind`; `''` for the event itself (not an object).
   */
  field: string;
  /** Why, in plain words, showing what was found: `expected a u32, got the float 1.5`. */
  message: string;
}

/** How many issues the error message lists; {@link EventValidationError.issues} holds all. */
const MAX_LISTED_ISSUES = 20;

/**
 * An event broke the contract. `issues` holds every issue found (not only the first); the
 * message lists them: `field "turn": expected a u32 …; field "reason": required field is missing`.
 */
export class EventValidationError extends Error {
  override readonly name = 'EventValidationError';
  readonly issues: ValidationIssue[];
  /** The event's `kind` when it is a string, else `undefined`. */
  readonly kind: string | undefined;

  constructor(issues: ValidationIssue[], kind: string | undefined) {
    super(formatIssues(issues));
    this.issues = issues;
    this.kind = kind;
  }
}

function formatIssues(issues: readonly ValidationIssue[]): string {
  const listed = issues
    .slice(0, MAX_LISTED_ISSUES)
    .map((issue) => (issue.field === '' ? `the event: ${issue.message}` : `field "${issue.field}": ${issue.message}`));
  const more = issues.length - listed.length;
  if (more > 0) listed.push(`and ${more} more issue${more === 1 ? '' : 's'}`);
  return listed.join('; ');
}

/**
 * How much {@link validateEvent} checks.
 *
 * @example
 * ```ts
 * validateEvent(event, { strict: true }); // the Rust core's contract, unknown kinds refused
 * ```
 */
export interface ValidateEventOptions {
  /**
   * Refuse a kind the contract does not name. By default such an event is valid when its
   * `kind` is a non-empty snake_case string (newer SDKs write more kinds).
   */
  strict?: boolean;
}

/** A kind this version does not know must look like one. */
const SNAKE_CASE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;

/**
 * Checks one parsed event against the contract and returns it with every *default* field
 * that was missing filled in (`[]`, `0`, `false`; `state: "running"` on
 * `agent_process_changed`), or throws an {@link EventValidationError} listing every issue.
 *
 * The result is a new shallow object (the input is never mutated) holding all the input's
 * fields, extra ones included, exactly; a missing *opt* field stays missing. An event of a
 * kind the contract does not name is returned as a shallow copy, unchecked beyond its `kind`
 * (and refused under `strict`).
 *
 * @example
 * ```ts
 * validateEvent(parseJson('{"kind": "suspended", "turn": 2, "reason": "ask_user"}'));
 * // { kind: 'suspended', turn: 2, reason: 'ask_user', pending_calls: [] }
 *
 * validateEvent(parseJson('{"kind": "suspended", "turn": -1, "pending_calls": [1]}'));
 * // throws EventValidationError: field "turn": expected a u32 (an integer 0..4294967295),
 * // got -1; field "reason": required field is missing; field "pending_calls[0]": expected
 * // a string, got 1
 *
 * validateEvent(parseJson('{"kind": "workflow_completed"}'));                   // kept as is
 * validateEvent(parseJson('{"kind": "workflow_completed"}'), { strict: true }); // throws
 * ```
 */
export function validateEvent(value: JsonValue, options?: ValidateEventOptions): SessionEvent {
  const shape = checkShape(value, options);
  const event = shallowCopy(value as JsonObject);
  const defaults = shape?.defaults ?? [];
  for (let i = 0; i < defaults.length; i++) {
    const field = defaults[i] as CompiledField;
    if (event[field.name] === undefined) event[field.name] = (field.makeDefault as () => JsonValue)();
  }
  return event as SessionEvent;
}

/** Throws {@link EventValidationError} unless `value` is a valid event; its checked shape (null for a kind the contract does not name). */
function checkShape(value: JsonValue, options: ValidateEventOptions | undefined): CompiledShape | null {
  if (!isJsonObject(value)) {
    throw new EventValidationError([{ field: '', message: `expected an object, got ${describeJsonValue(value)}` }], undefined);
  }
  const kind = value['kind'];
  if (typeof kind !== 'string') {
    const message = kind === undefined ? MISSING : `expected a string, got ${describeJsonValue(kind)}`;
    throw new EventValidationError([{ field: 'kind', message }], undefined);
  }

  const compiled = COMPILED_KINDS.get(kind);
  if (compiled === undefined) {
    let message: string | null = null;
    if (options?.strict === true) {
      message = `unknown kind ${quoteString(kind)} (strict mode accepts only the ${COMPILED_KINDS.size} kinds of the contract)`;
    } else if (kind === '') {
      message = 'expected a non-empty snake_case string, got the empty string ""';
    } else if (!SNAKE_CASE.test(kind)) {
      message = `expected a snake_case string such as "tool_gated", got ${describeJsonValue(kind)}`;
    }
    if (message !== null) throw new EventValidationError([{ field: 'kind', message }], kind);
    return null;
  }

  const shape = compiled.shapeKey !== null && value[compiled.shapeKey] !== undefined ? compiled.whenPresent : compiled.whenMissing;
  if (!checkFields(shape.fields, value, '', null)) {
    const issues: ValidationIssue[] = [];
    checkFields(shape.fields, value, '', issues);
    throw new EventValidationError(issues, kind);
  }

  return shape;
}

/**
 * The event's turn: its `turn` field when that is a u32 number, else `null`. For a known kind
 * it is the validated `turn` (`run_started`, `run_terminal` and `memory_retrieval_result`
 * have none, whatever extra field they carry); for a kind this version does not know, its
 * `turn` if that is an integer in 0..4294967295.
 *
 * @example
 * ```ts
 * eventTurn(validateEvent(parseJson('{"kind": "page_in", "turn": 3, "entry_count": 2}')));  // 3
 * eventTurn(validateEvent(parseJson('{"kind": "run_terminal", "reason": "done",
 *   "turns_used": 4, "total_tokens": 100}')));                                             // null
 * eventTurn(validateEvent(parseJson('{"kind": "workflow_completed", "turn": 7}')));         // 7
 * ```
 */
export function eventTurn(event: SessionEvent): number | null {
  const compiled = COMPILED_KINDS.get(event.kind);
  if (compiled !== undefined && !compiled.hasTurn) return null;
  const turn = event['turn'];
  return isU32(turn) ? turn : null;
}

/**
 * A new null-prototype object with the same own fields (`__proto__` included, as an ordinary
 * key). A loop over `Object.keys` is several times faster than `Object.assign` on the
 * dictionary-mode objects the parser makes.
 */
function shallowCopy(value: JsonObject): JsonObject {
  const copy = Object.create(null) as JsonObject;
  const keys = Object.keys(value);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    copy[key] = value[key] as JsonValue;
  }
  return copy;
}

// ---------------------------------------------------------------------------------------------
// The checks. Each returns true when the value is fine. When `issues` is null (the fast
// pass) it returns false at the first problem and builds no path or message; otherwise it
// pushes every problem with its path and goes on.
// ---------------------------------------------------------------------------------------------

const MISSING = 'required field is missing';
/** Checks the named fields of an object; `prefix` is the path of the object plus `.` (or ''). */
function checkFields(
  fields: readonly CompiledField[],
  object: JsonObject,
  prefix: string,
  issues: ValidationIssue[] | null,
): boolean {
  let ok = true;
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i] as CompiledField;
    const v = object[field.name];
    if (v === undefined) {
      if (field.presence !== 'required') continue;
      if (issues === null) return false;
      issues.push({ field: prefix + field.name, message: MISSING });
      ok = false;
      continue;
    }
    if (v === null && field.type.tag !== 'json') {
      if (field.presence === 'optional') continue;
      if (issues === null) return false;
      let message = `expected ${field.type.expected}, got null`;
      if (field.makeDefault !== null) {
        message += ` (a missing field takes ${JSON.stringify(field.makeDefault())}, but null is not allowed)`;
      }
      issues.push({ field: prefix + field.name, message });
      ok = false;
      continue;
    }
    if (!checkValue(field.type, v, field.snapshot, issues === null ? '' : prefix + field.name, issues)) {
      if (issues === null) return false;
      ok = false;
    }
  }
  return ok;
}

function checkValue(
  type: ValueType,
  v: JsonValue,
  snapshot: boolean,
  path: string,
  issues: ValidationIssue[] | null,
): boolean {
  switch (type.tag) {
    case 'string':
      if (typeof v !== 'string') break;
      if (!snapshot || !hasUnstorableChar(v)) return true;
      issues?.push({ field: path, message: unstorableMessage(v) });
      return false;
    case 'u32':
      if (isU32(v)) return true;
      issues?.push({ field: path, message: integerMessage(type.expected, v, false) });
      return false;
    case 'u64':
      if (isU64(v)) return true;
      issues?.push({ field: path, message: integerMessage(type.expected, v, true) });
      return false;
    case 'bool':
      if (typeof v === 'boolean') return true;
      break;
    case 'json':
      return true;
    case 'object':
      if (isJsonObject(v)) return true;
      break;
    case 'struct':
      if (!isJsonObject(v)) break;
      return checkFields(type.fields, v, issues === null ? '' : `${path}.`, issues);
    case 'array': {
      if (!Array.isArray(v)) break;
      let ok = true;
      for (let i = 0; i < v.length; i++) {
        if (!checkValue(type.items, v[i] as JsonValue, snapshot, issues === null ? '' : `${path}[${i}]`, issues)) {
          if (issues === null) return false;
          ok = false;
        }
      }
      return ok;
    }
    case 'tuple': {
      if (!Array.isArray(v) || v.length !== type.items.length) break;
      let ok = true;
      for (let i = 0; i < v.length; i++) {
        const items = type.items[i] as ValueType;
        if (!checkValue(items, v[i] as JsonValue, snapshot, issues === null ? '' : `${path}[${i}]`, issues)) {
          if (issues === null) return false;
          ok = false;
        }
      }
      return ok;
    }
  }
  issues?.push({ field: path, message: `expected ${type.expected}, got ${describeJsonValue(v)}` });
  return false;
}

function integerMessage(expected: string, v: JsonValue, u64: boolean): string {
  const max = u64 ? U64_MAX : U32_MAX;
  if (typeof v === 'bigint') return `expected ${expected} (an integer 0..${max}), got ${v}`;
  if (typeof v === 'number' && Number.isInteger(v) && !Object.is(v, -0)) {
    if (u64 && v > 0 && !Number.isSafeInteger(v) && v <= 2 ** 64) {
      return `expected ${expected}, got the imprecise number ${BigInt(v)} (above 2^53 it must be read as a bigint)`;
    }
    return `expected ${expected} (an integer 0..${max}), got ${describeJsonValue(v)}`;
  }
  return `expected ${expected}, got ${describeJsonValue(v)}`;
}

// ---------------------------------------------------------------------------------------------
// Messages.
// ---------------------------------------------------------------------------------------------

const UNSTORABLE = 'which PostgreSQL cannot store; the snapshot reads this field';

function hex(code: number): string {
  return `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
}

function unstorableMessage(s: string): string {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0) return `contains U+0000, ${UNSTORABLE}`;
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
      return `contains a lone surrogate ${hex(c)}, ${UNSTORABLE}`;
    }
    if (c >= 0xdc00 && c <= 0xdfff) return `contains a lone surrogate ${hex(c)}, ${UNSTORABLE}`;
  }
  return `contains a character ${UNSTORABLE}`;
}

