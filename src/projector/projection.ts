import { type Migration, type RawBuilder, sql } from 'kysely';
import type { JsonValue } from '../json/json-value.js';
import { defineEventReads, type EventReads, type FieldValue, fieldNames, readFieldsSql, readKindsSql } from './event-reads.js';

/**
 * A batch of events as a projection folds it: two relations, in SQL.
 */
export interface EventBatchSql {
  /**
   * The events to fold of the kinds in {@link Projection.reads}, each readable: `session_id`,
   * `seq`, `kind`, `recorded_at`, and one typed column per field the projection reads (see
   * `readFieldsSql`).
   */
  events: RawBuilder<unknown>;
  /**
   * Each session the batch moves once: `session_id`, `last_seq` (the last seq folded now) and
   * one column per {@link Projection.counters} entry, the batch's count of that kind.
   */
  sessions: RawBuilder<unknown>;
}

/**
 * An event as a projection's in-memory fold sees it (see {@link Projection.evolve}).
 */
export interface ProjectionEvent {
  readonly kind: string;
  /**
   * The fields {@link Projection.reads} names for this kind, read as they say (a missing one
   * already defaulted); `{}` for a kind the projection only counts.
   */
  readonly fields: Readonly<Record<string, FieldValue>>;
}

/**
 * A projection: SQL tables folded from the event log by the projector daemon, and optionally
 * the same fold in memory ({@link ProjectionFold}), which `verify` proves the tables against.
 * A plain value: the engine takes a list of them and knows none by name. Each projection has
 * its own checkpoint, lease, stopped sessions and set-aside events.
 *
 * @example
 * ```ts
 * export const toolCallsProjection = defineProjection({
 *   name: 'tool_calls',
 *   version: 1,
 *   description: 'tool calls gated per session',
 *   migrations: { '0001-tables': { up: (db) => sql`CREATE TABLE tool_calls (…)`.execute(db) } },
 *   sessionHeads: 'tool_calls',
 *   tables: ['tool_calls'],
 *   views: ['tool_calls_json'],
 *   snapshotView: 'tool_calls_json',
 *   reads: defineEventReads({}),
 *   counters: { gated: 'tool_gated' },
 *   foldStatements: ({ sessions }) => [sql`INSERT INTO tool_calls … ON CONFLICT …`],
 *   init: () => ({ gated: 0 }),
 *   evolve: (state, event) => ({ gated: state.gated + (event.kind === 'tool_gated' ? 1 : 0) }),
 *   toJson: (state) => ({ gated: state.gated }),
 * });
 * ```
 */
export interface Projection<State = any> extends Partial<ProjectionFold<State>> {
  /**
   * Its name: a lower-case SQL identifier (`[a-z][a-z0-9_]*`). It names its checkpoint, lease,
   * stopped sessions, set-aside events, `/metrics` label, `--projection` and migrations.
   */
  readonly name: string;
  /** Its version: raise it when its fold changes, then `os-audit rebuild --projection NAME`. */
  readonly version: number;
  /** One line on what it keeps, for `--help`, `status` and the metrics. */
  readonly description: string;
  /**
   * Its own migrations, applied by `os-audit migrate` after the engine's, by name in order
   * (recorded as `NAME/KEY`): its tables, indexes and views. The engine registers the
   * projection and grants on its {@link tables} and {@link views} itself.
   */
  readonly migrations: Readonly<Record<string, Migration>>;
  /** Its table with one row per session, `session_id` and `last_seq`: how far each is folded. */
  readonly sessionHeads: string;
  /**
   * Its tables (the heads among them), in the order a rebuild empties them: the projector
   * role writes them, the reader role reads them.
   */
  readonly tables: readonly string[];
  /** Its views, for the reader role (dashboards). */
  readonly views: readonly string[];
  /**
   * A view of `session_id` and `snapshot` (JSON, keys in order): each session's snapshot as
   * `os-audit snapshot` prints it, and `verify` compares with {@link toJson} of the fold.
   */
  readonly snapshotView: string;
  /** The kinds whose fields it reads, and how (see `defineEventReads`): the one place it says so. */
  readonly reads: EventReads;
  /** Its counters: column name → the kind it counts, whatever the event's fields. */
  readonly counters: Readonly<Record<string, string>>;
  /**
   * Its fold, as data-modifying statements (`INSERT … SELECT … ON CONFLICT`) over a batch, each
   * reading the batch's relations itself: every session moves to its `last_seq`. On one
   * server they run as expressions of the batch's one statement: no data-modifying `WITH`
   * inside, no parameters. On Citus they run one after another in the batch's transaction.
   * There each should join its relations by `session_id` (and group by it), so that Citus runs
   * it on every shard where the data is.
   *
   * @example
   * ```ts
   * foldStatements: ({ sessions }) => [sql`INSERT INTO my_heads SELECT session_id, last_seq FROM ${sessions} AS s
   *   ON CONFLICT (session_id) DO UPDATE SET last_seq = excluded.last_seq`]
   * ```
   */
  foldStatements(batch: EventBatchSql): readonly RawBuilder<unknown>[];
}

/**
 * A projection's fold in memory: the reference `verify` proves its SQL tables against, and what
 * `snapshot --at-seq` and the console's slider compute. A projection without one is SQL-only.
 */
export interface ProjectionFold<State = any> {
  /** The state of a session before its first event. */
  init(): State;
  /**
   * The state after one more event, of a kind it reads or counts, readable (the engine stops
   * or sets aside the others, and passes over the kinds it neither reads nor counts). It may
   * change `state` in place and return it: the engine keeps no other reference.
   */
  evolve(state: State, event: ProjectionEvent): State;
  /** The state as JSON, keys in order: what {@link Projection.snapshotView} holds for the same events. */
  toJson(state: State): JsonValue;
}

/** A projection with its in-memory fold. */
export type FoldedProjection<State = any> = Projection<State> & ProjectionFold<State>;

/** Whether the projection has an in-memory fold (all of `init`, `evolve` and `toJson`). */
export function hasInMemoryFold<State>(projection: Projection<State>): projection is FoldedProjection<State> {
  return projection.init !== undefined && projection.evolve !== undefined && projection.toJson !== undefined;
}

/** Projection names: lower-case SQL identifiers, so that they can name tables, labels and flags alike. */
const PROJECTION_NAME = /^[a-z][a-z0-9_]{0,62}$/;

/**
 * Checks a projection and gives it back: its name, its reads (`defineEventReads`), that its
 * session heads are among its tables and that no counter column is also a read field.
 *
 * @example
 * ```ts
 * export const myProjection = defineProjection({ name: 'my_projection', … });
 * ```
 */
export function defineProjection<State>(projection: FoldedProjection<State>): FoldedProjection<State>;
export function defineProjection<State>(projection: Projection<State>): Projection<State>;
export function defineProjection<State>(projection: Projection<State>): Projection<State> {
  const { name } = projection;
  if (!PROJECTION_NAME.test(name)) throw new Error(`projection ${JSON.stringify(name)}: a name is a lower-case SQL identifier ([a-z][a-z0-9_]*, at most 63 characters)`);
  if (!Number.isSafeInteger(projection.version) || projection.version < 1) throw new Error(`projection ${name}: version must be a positive integer`);
  defineEventReads(projection.reads);
  const foldParts = [projection.init, projection.evolve, projection.toJson].filter((part) => part !== undefined).length;
  if (foldParts !== 0 && foldParts !== 3) throw new Error(`projection ${name}: an in-memory fold is init, evolve and toJson together (or none of them, for a SQL-only projection)`);
  if (!projection.tables.includes(projection.sessionHeads)) throw new Error(`projection ${name}: its session heads (${projection.sessionHeads}) must be one of its tables`);
  if (!projection.views.includes(projection.snapshotView)) throw new Error(`projection ${name}: its snapshot view (${projection.snapshotView}) must be one of its views`);
  const fields = new Set(fieldNames(projection.reads));
  for (const column of Object.keys(projection.counters)) {
    if (fields.has(column)) throw new Error(`projection ${name}: counter ${column} is also a field it reads`);
  }
  return projection;
}

/**
 * A relation of stored events (`session_id`, `seq`, `kind`, `recorded_at`, `payload`, `payload_text`) as a
 * whole batch for `projection`: each event's fields read (an unreadable one left out, without
 * stopping its session), its sessions grouped from it. The set-based projection of everything
 * (the benchmark's limit) folds the whole log so.
 *
 * @example
 * ```ts
 * const batch = eventBatchOf(projection, sql`session_events`);
 * for (const statement of projection.foldStatements(batch)) await statement.execute(trx);
 * ```
 */
export function eventBatchOf(projection: Projection, events: RawBuilder<unknown>): EventBatchSql {
  return {
    events: sql`(SELECT e.session_id, e.seq, e.kind, e.recorded_at, r.* FROM ${events} AS e
      CROSS JOIN LATERAL ${readFieldsSql(projection.reads, { kind: sql`e.kind`, payload: sql`e.payload`, standIn: sql`e.payload_text IS NOT NULL` })} AS r
      WHERE e.kind IN (${readKindsSql(projection.reads)}) AND r.problem IS NULL)`,
    sessions: sql`(SELECT session_id, max(seq) AS last_seq${countersSql(projection)} FROM ${events} AS e GROUP BY session_id)`,
  };
}

/**
 * The projection's counters as aggregates over events with a `kind` column (of those `where`
 * holds for), each after a comma: nothing at all for a projection without counters.
 */
export function countersSql(projection: Projection, where: RawBuilder<boolean> = sql`true`): RawBuilder<unknown> {
  return sql.join(
    Object.entries(projection.counters).map(
      ([column, kind]) => sql`, count(*) FILTER (WHERE kind = ${sql.lit(kind)} AND ${where}) AS ${sql.id(column)}`,
    ),
    sql``,
  );
}

/**
 * The whole log folded into the projection's empty tables in one statement: the set-based
 * projection of everything, the limit the benchmark compares the projector with. On one
 * server: Citus refuses the statement (its read of the whole log would pass through the
 * coordinator); the cluster's limit is `bench/citus-limit.ts`.
 *
 * @example
 * ```ts
 * await db.transaction().execute((trx) => foldWholeLogSql(projection).execute(trx));
 * ```
 */
export function foldWholeLogSql(projection: Projection): RawBuilder<unknown> {
  const { events, sessions } = eventBatchOf(projection, sql`session_events`);
  return sql`WITH whole_log_events AS MATERIALIZED ${events}, ${foldExpressionsSql(projection, { events: sql`whole_log_events`, sessions })} SELECT`;
}

/**
 * The projection's fold statements as common table expressions (`fold_0 AS (…), …`) of one
 * statement, for one server; `batch.events` is best a materialized relation, read by each.
 */
export function foldExpressionsSql(projection: Projection, batch: EventBatchSql): RawBuilder<unknown> {
  return sql.join(projection.foldStatements(batch).map((statement, index) => sql`${sql.id(`fold_${index}`)} AS (${statement})`));
}
