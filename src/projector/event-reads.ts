/**
 * What a projection reads of the events it folds, declared once. It is read two ways with the
 * same rules, so that the two agree on every event: in memory ({@link readEvent}, for `verify`
 * and `snapshot --at-seq`) and in SQL ({@link readFieldsSql}, for the projector).
 *
 * Each kind the projection reads names its fields, each with a type and what a missing (or
 * `null`) field reads as. Some events are unreadable: a field missing where it must not be, of
 * another type, or a string holding U+0000 or a lone surrogate (SQL text cannot hold those).
 * The projection stops that session there (shared/spec/session-events.md, section 3). Fields
 * not named are never looked at.
 *
 * @example
 * ```ts
 * const reads = defineEventReads({
 *   suspended: { turn: field.u32(), reason: field.string(), pending_calls: field.strings().or([]) },
 * });
 * readEvent(reads, { kind: 'suspended', turn: 3, reason: 'ask_user' });
 * // { problem: null, fields: { turn: 3, reason: 'ask_user', pending_calls: [] } }
 * ```
 *
 * @module
 */

import { type RawBuilder, sql } from 'kysely';
import type { JsonValue } from '../json/json-value.js';
import { hasUnstorableChar, UNSTORABLE_STRING_KEY } from '../json/storable-json.js';
import { stringifyJson } from '../json/stringify-json.js';
import { isU32, isU64 } from '../json/unsigned-integers.js';

/** The types a field can be read as: `u32` and `u64` are JSON integers in their range, `strings` an array of strings. */
export type FieldType = 'u32' | 'u64' | 'string' | 'strings';

/** The SQL type of a field's column, read (see `readFieldsSql`). */
export const FIELD_SQL_TYPES: Readonly<Record<FieldType, string>> = { u32: 'bigint', u64: 'numeric', string: 'text', strings: 'text[]' };

/**
 * The columns of the fields `reads` names, each of its SQL type (`FIELD_SQL_TYPES`), for a
 * `CREATE TABLE`: `"turn" bigint, …`.
 */
export function fieldColumnsDefinitionSql(reads: EventReads): RawBuilder<unknown> {
  const types = new Map(Object.values(reads).flatMap((fields) => Object.entries(fields).map(([name, read]) => [name, read.type] as const)));
  return sql.join(fieldNames(reads).map((name) => sql`${sql.id(name)} ${sql.raw(FIELD_SQL_TYPES[types.get(name)!])}`));
}

/** A value a field reads as, in memory (`u64` above 2^53 as a `bigint`). */
export type FieldValue = number | bigint | string | readonly string[] | null;

/** How one field is read. */
export class FieldRead {
  constructor(
    readonly type: FieldType,
    /** `unreadable`: a missing or null field makes the event unreadable; else what it reads as. */
    readonly whenMissing: 'unreadable' | { readonly value: FieldValue },
    /** A field of another type reads as `null` instead of making the event unreadable. */
    readonly lenient: boolean,
  ) {}

  /** A missing or null field reads as `null`. */
  orNull(): FieldRead {
    return new FieldRead(this.type, { value: null }, this.lenient);
  }

  /** A missing or null field reads as `value`. */
  or(value: FieldValue): FieldRead {
    return new FieldRead(this.type, { value }, this.lenient);
  }

  /**
   * Read when present with its type, else `null`: never makes the event unreadable. For what
   * a projection keeps beside what it folds (a column of convenience).
   */
  whenTyped(): FieldRead {
    return new FieldRead(this.type, { value: null }, true);
  }
}

/**
 * The field reads of the vocabulary: each required (missing or null makes the event unreadable)
 * until told otherwise. `u64` is for plug-in projections (the OS snapshot reads none): SQL reads
 * it as `numeric`, memory as a number, or a `bigint` above 2^53.
 *
 * @example
 * ```ts
 * field.u32();                      // a turn: required
 * field.u64().orNull();             // total_tokens: null when missing
 * field.string().or('running');     // state: "running" when missing
 * field.strings().whenTyped();      // kept when it is a string[], else null, never unreadable
 * ```
 */
export const field = {
  u32: () => new FieldRead('u32', 'unreadable', false),
  u64: () => new FieldRead('u64', 'unreadable', false),
  string: () => new FieldRead('string', 'unreadable', false),
  strings: () => new FieldRead('strings', 'unreadable', false),
};

/** The fields a projection reads, per kind. */
export type EventReads = Readonly<Record<string, Readonly<Record<string, FieldRead>>>>;

/**
 * The columns the projector's rows carry beside the read fields: the stored event's, and those
 * a batch adds (see `batch-sql.ts`). A field of the same name would hide them or make them
 * ambiguous.
 */
const RESERVED_NAMES = new Set([
  'session_id', 'seq', 'kind', 'recorded_at', 'payload', 'payload_text', 'stand_in', 'position', 'prev_seq', 'needs_log', 'problem', 'rank',
  'target_seq', 'log_events', 'missing_seq', 'hole',
]);

/**
 * Checks a table of reads. A field name that several kinds read has one type in all of them
 * (SQL gives it one column). No field is a column of the projector's rows. A default is a
 * value of its field's type that SQL text can hold.
 *
 * @example
 * ```ts
 * const reads = defineEventReads({ resumed: { turn: field.u32() }, budget_exceeded: { turn: field.u32(), budget: field.string() } });
 * defineEventReads({ resumed: { rank: field.u32() } }); // throws: a column of the projector's rows
 * ```
 */
export function defineEventReads<T extends EventReads>(reads: T): T {
  const types = new Map<string, FieldType>();
  for (const [kind, fields] of Object.entries(reads)) {
    for (const [name, read] of Object.entries(fields)) {
      if (RESERVED_NAMES.has(name)) throw new Error(`event reads: field "${name}" of ${kind} cannot be read under its own name (a column of the projector's rows)`);
      if (read.whenMissing !== 'unreadable' && read.whenMissing.value !== null) {
        const problem = typeProblem(read.type, read.whenMissing.value as JsonValue, name);
        if (problem !== null) throw new Error(`event reads: the default of ${kind}: ${problem}`);
      }
      const known = types.get(name);
      if (known !== undefined && known !== read.type) throw new Error(`event reads: field "${name}" of ${kind} is a ${read.type}, elsewhere a ${known}`);
      types.set(name, read.type);
    }
  }
  return reads;
}

/** An event as the folds take it: its fields by name (`JsonObject`, or an SDK's typed event). */
export type EventObject = Readonly<Record<string, unknown>>;

/** What {@link readEvent} found: the fields, or why the event cannot be read. */
export type EventRead = { problem: null; fields: Record<string, FieldValue> } | { problem: string };

/**
 * Reads an event of a kind in `reads` as the projection does; `undefined` for a kind it does
 * not read. The first problem found, in the order the fields are declared, is the one given.
 *
 * @example
 * ```ts
 * readEvent(reads, { kind: 'suspended', turn: 1.5, reason: 'x' }).problem;
 * // 'field "turn": expected a u32 (an integer 0..4294967295), got 1.5'
 * ```
 */
export function readEvent(reads: EventReads, event: EventObject): EventRead | undefined {
  // Own members only: a kind `toString` or a field `constructor` must not find Object.prototype's.
  const kind = event['kind'] as string;
  if (!Object.hasOwn(reads, kind)) return undefined;
  const values: Record<string, FieldValue> = {};
  for (const [name, read] of Object.entries(reads[kind]!)) {
    const raw = (Object.hasOwn(event, name) ? event[name] : undefined) as JsonValue | undefined;
    if (raw === undefined || raw === null) {
      if (read.whenMissing === 'unreadable') return { problem: `field "${name}": ${MISSING}` };
      values[name] = read.whenMissing.value;
      continue;
    }
    const problem = typeProblem(read.type, raw, name);
    if (problem === null) values[name] = raw as FieldValue;
    else if (read.lenient) values[name] = null;
    else return { problem };
  }
  return { problem: null, fields: values };
}

const MISSING = 'missing or null';
const UNSTORABLE = 'contains U+0000 or a lone surrogate, which PostgreSQL cannot store';
const EXPECTED: Record<FieldType, string> = {
  u32: 'a u32 (an integer 0..4294967295)',
  u64: 'a u64 (an integer 0..18446744073709551615)',
  string: 'a string',
  strings: 'an array of strings',
};
/** How much of an offending value a message shows. */
const SHOWN = 60;

function typeProblem(type: FieldType, value: JsonValue, name: string): string | null {
  switch (type) {
    case 'u32':
      return isU32(value) ? null : expected(name, type, value);
    case 'u64':
      return isU64(value) ? null : expected(name, type, value);
    case 'string':
      if (typeof value !== 'string') return expected(name, type, value);
      return hasUnstorableChar(value) ? `field "${name}": ${UNSTORABLE}` : null;
    case 'strings': {
      if (!Array.isArray(value)) return expected(name, type, value);
      for (let i = 0; i < value.length; i++) {
        const problem = typeProblem('string', value[i] as JsonValue, `${name}[${i}]`);
        if (problem !== null) return problem;
      }
      return null;
    }
  }
}

function expected(name: string, type: FieldType, value: JsonValue): string {
  const text = stringifyJson(value);
  return `field "${name}": expected ${EXPECTED[type]}, got ${text.length > SHOWN ? `${text.slice(0, SHOWN)}…` : text}`;
}

/** A stored event as SQL expressions: its kind, its payload (`json`), whether that is a readable stand-in. */
export interface StoredEventSql {
  kind: RawBuilder<unknown>;
  payload: RawBuilder<unknown>;
  standIn: RawBuilder<boolean>;
}

/**
 * The SQL twin of {@link readEvent}: a subquery for `CROSS JOIN LATERAL` over a stored event
 * (see {@link StoredEventSql}). Its column `problem` is null when the event can be read. Then
 * comes one typed column per field named in `reads` (`bigint` for a u32, `numeric` for a u64,
 * `text`, `text[]`), all null for an event of another kind. The payload is parsed once, and
 * only for the kinds in `reads`. In a readable stand-in (`payload_text` set), an object in
 * place of a string is a string SQL cannot hold.
 *
 * @example
 * ```ts
 * const event = { kind: sql`e.kind`, payload: sql`e.payload`, standIn: sql<boolean>`e.payload_text IS NOT NULL` };
 * sql`SELECT e.seq, r.problem, r.turn FROM session_events e CROSS JOIN LATERAL ${readFieldsSql(reads, event)} AS r`
 * ```
 */
export function readFieldsSql(reads: EventReads, event: StoredEventSql): RawBuilder<unknown> {
  return sql`(SELECT ${readFieldColumnsSql(reads, event, sql`r`)} FROM ${rawFieldsSql(reads, event)})`;
}

/**
 * The top-level fields `reads` names of a stored event, as they are in its payload (`json`), as a
 * `FROM` item of alias `r`: `json_to_record(…) AS r(…)`, parsed only for the kinds in `reads`.
 * With {@link readFieldColumnsSql} over it, what {@link readFieldsSql} reads; Citus takes the
 * two directly in a query's `FROM` and select list, where it refuses the subquery.
 *
 * @example
 * ```ts
 * sql`SELECT e.seq, ${readFieldColumnsSql(reads, event, sql`r`)} FROM session_events AS e CROSS JOIN LATERAL ${rawFieldsSql(reads, event)}`
 * ```
 */
export function rawFieldsSql(reads: EventReads, { kind, payload }: StoredEventSql): RawBuilder<unknown> {
  const names = fieldNames(reads);
  // Kinds read for themselves alone: nothing to parse, but a FROM item still needs a column.
  if (names.length === 0) return sql`(VALUES (NULL::json)) AS r(os_audit_no_field)`;
  const columns = sql.join(names.map((name) => sql`${sql.id(name)} json`));
  // The kind gates the parse inside the call: a condition beside it, the planner would check
  // only after parsing.
  return sql`json_to_record(CASE WHEN ${kind} IN (${readKindsSql(reads)}) THEN ${payload} END) AS r(${columns})`;
}

/** The select list of {@link readFieldsSql} over the raw fields of {@link rawFieldsSql} (alias `raw`): `problem`, then a column per field. */
export function readFieldColumnsSql(reads: EventReads, { kind, standIn }: StoredEventSql, raw: RawBuilder<unknown>): RawBuilder<unknown> {
  const kinds = Object.keys(reads);
  const names = fieldNames(reads);
  const types = new Map(kinds.flatMap((k) => Object.entries(reads[k]!).map(([name, read]) => [name, read.type] as const)));
  const field = (name: string) => sql`${raw}.${sql.id(name)}`;
  // Why a field present has not its type: the same check whichever kind reads it.
  const typeProblem = (name: string) => typeProblemSql(name, types.get(name)!, field(name), standIn);
  const problems = kinds.map((k) => {
    const fields = Object.entries(reads[k]!).filter(([, read]) => !read.lenient);
    const checks = fields.map(([name, read]) =>
      read.whenMissing === 'unreadable'
        ? sql`CASE WHEN ${field(name)} IS NULL THEN ${sql.lit(`field "${name}": ${MISSING}`)} ELSE ${typeProblem(name)} END`
        : typeProblem(name),
    );
    return sql`WHEN ${sql.lit(k)} THEN ${checks.length === 0 ? sql`NULL::text` : sql`coalesce(${sql.join(checks)})`}`;
  });
  const values = names.map((name) => {
    const readers = kinds.filter((k) => Object.hasOwn(reads[k]!, name));
    const cases = readers.map((k) => sql`WHEN ${sql.lit(k)} THEN ${fieldValueSql(reads[k]![name]!, field(name))}`);
    return sql`CASE ${kind} ${sql.join(cases, sql` `)} END AS ${sql.id(name)}`;
  });
  const problem = problems.length === 0 ? sql`NULL::text` : sql`CASE ${kind} ${sql.join(problems, sql` `)} END`;
  return sql`${problem} AS problem${sql.join(values.map((value) => sql`, ${value}`), sql``)}`;
}

/**
 * The kinds `reads` reads, as a list of SQL literals: for `kind IN (…)`.
 *
 * @example
 * ```ts
 * sql`SELECT count(*) FROM session_events WHERE kind IN (${readKindsSql(projection.reads)})`
 * ```
 */
export function readKindsSql(reads: EventReads): RawBuilder<unknown> {
  const kinds = Object.keys(reads);
  // `IN ()` is no SQL: a projection that only counts reads no kind, and `IN (NULL)` matches none.
  return kinds.length === 0 ? sql`NULL::text` : sql.join(kinds.map((kind) => sql.lit(kind)));
}

/**
 * Every field any kind of `reads` names, once, in the order first met: the columns of
 * {@link readFieldsSql} after `problem`.
 *
 * @example
 * ```ts
 * fieldNames(defineEventReads({ resumed: { turn: field.u32() }, budget_exceeded: { turn: field.u32(), budget: field.string() } }));
 * // ['turn', 'budget']
 * ```
 */
export function fieldNames(reads: EventReads): string[] {
  return [...new Set(Object.values(reads).flatMap((fields) => Object.keys(fields)))];
}

/** Whether the raw field (json) has the type. */
function hasTypeSql(type: FieldType, raw: RawBuilder<unknown>): RawBuilder<boolean> {
  switch (type) {
    case 'u32':
      // CASE, not AND: the cast must not run before the pattern has matched.
      return sql`(CASE WHEN ${raw}::text ~ '^(0|[1-9][0-9]{0,9})$' THEN ${raw}::text::bigint <= 4294967295 ELSE false END)`;
    case 'u64':
      return sql`(CASE WHEN ${raw}::text ~ '^(0|[1-9][0-9]{0,19})$' THEN ${raw}::text::numeric <= 18446744073709551615 ELSE false END)`;
    case 'string':
      return sql`(left(${raw}::text, 1) = '"')`;
    case 'strings':
      return sql`(CASE WHEN json_typeof(${raw}) = 'array'
        THEN NOT EXISTS (SELECT FROM json_array_elements(${raw}) AS x(item) WHERE left(x.item::text, 1) <> '"') ELSE false END)`;
  }
}

/** The raw field (json, known to have the type) as its SQL value. */
function typedValueSql(type: FieldType, raw: RawBuilder<unknown>): RawBuilder<unknown> {
  switch (type) {
    case 'u32':
      return sql`${raw}::text::bigint`;
    case 'u64':
      return sql`${raw}::text::numeric`;
    case 'string':
      // Without an escape the string is the text between the quotes: no second parse (#>> is slow).
      return sql`(CASE WHEN strpos(${raw}::text, '\\') = 0 THEN substr(${raw}::text, 2, length(${raw}::text) - 2) ELSE ${raw} #>> '{}' END)`;
    case 'strings':
      return sql`ARRAY(SELECT json_array_elements_text(${raw}))`;
  }
}

function fieldValueSql(read: FieldRead, raw: RawBuilder<unknown>): RawBuilder<unknown> {
  const value = sql`CASE WHEN ${hasTypeSql(read.type, raw)} THEN ${typedValueSql(read.type, raw)} END`;
  if (read.whenMissing === 'unreadable' || read.whenMissing.value === null) return value;
  return sql`CASE WHEN ${raw} IS NULL THEN ${missingValueSql(read.type, read.whenMissing.value)} ELSE ${value} END`;
}

function missingValueSql(type: FieldType, value: FieldValue): RawBuilder<unknown> {
  switch (type) {
    case 'u32':
      return sql`${sql.lit(Number(value))}::bigint`;
    case 'u64':
      return sql`${sql.lit(String(value))}::numeric`;
    case 'string':
      return sql`${sql.lit(String(value))}::text`;
    case 'strings':
      // An item per literal: JSON's escapes (`\n`) are not those of an array literal ('{…}').
      return sql`ARRAY[${sql.join((value as readonly string[]).map((item) => sql.lit(item)))}]::text[]`;
  }
}

/** Why the raw field, when present, has not its type (null when it is missing or has it). */
function typeProblemSql(name: string, type: FieldType, raw: RawBuilder<unknown>, standIn: RawBuilder<boolean>): RawBuilder<string | null> {
  return sql`CASE WHEN ${raw} IS NULL OR ${hasTypeSql(type, raw)} THEN NULL::text
    ELSE ${type === 'strings' ? listProblemSql(name, raw, standIn) : valueProblemSql(sql.lit(name), type, raw, standIn)} END`;
}

/** The problem of a raw value that does not have the type; `name` a text expression. */
function valueProblemSql(name: RawBuilder<unknown>, type: FieldType, raw: RawBuilder<unknown>, standIn: RawBuilder<boolean>): RawBuilder<string> {
  const got = sql`CASE WHEN length(${raw}::text) > ${sql.lit(SHOWN)} THEN left(${raw}::text, ${sql.lit(SHOWN)}) || '…' ELSE ${raw}::text END`;
  const wrongType = sql<string>`format('field "%s": expected %s, got %s', ${name}, ${sql.lit(EXPECTED[type])}, ${got})`;
  if (type !== 'string') return wrongType;
  return sql`CASE WHEN ${standIn} AND ${raw}::text LIKE ${sql.lit(`{"${UNSTORABLE_STRING_KEY}":%`)} THEN format('field "%s": %s', ${name}, ${sql.lit(UNSTORABLE)})
    ELSE ${wrongType} END`;
}

function listProblemSql(name: string, raw: RawBuilder<unknown>, standIn: RawBuilder<boolean>): RawBuilder<string> {
  return sql`CASE WHEN json_typeof(${raw}) <> 'array' THEN ${valueProblemSql(sql.lit(name), 'strings', raw, standIn)}
    ELSE (SELECT ${valueProblemSql(sql`${sql.lit(name)} || '[' || (x.ordinal - 1) || ']'`, 'string', sql`x.item`, standIn)}
          FROM json_array_elements(${raw}) WITH ORDINALITY AS x(item, ordinal)
          WHERE left(x.item::text, 1) <> '"' ORDER BY x.ordinal LIMIT 1) END`;
}
