import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { DB } from '../src/db/schema.js';
import { fieldNames, rawFieldsSql, readFieldColumnsSql, readKindsSql } from '../src/projector/event-reads.js';
import { eventBatchOf, type EventBatchSql, type Projection } from '../src/projector/projection.js';
import { batchTableOf } from '../src/projector/sql/session-batch-sql.js';

/**
 * The set-based limit on Citus: the whole log folded by statements that Citus runs on the
 * shards, where the data is, the workers in parallel. It does what the projector's batches do,
 * over the whole log at once: the events are read into the projection's batch table, then its
 * own fold statements run. Every statement is EXPLAINed before it is timed
 * ({@link explainDistributedLimit}).
 * Why: docs/design/citus-catch-up-limit.md
 */
export function wholeLogStatements(projection: Projection): readonly RawBuilder<unknown>[] {
  const event = { kind: sql`e.kind`, payload: sql`e.payload`, standIn: sql<boolean>`e.payload_text IS NOT NULL` };
  const table = sql.table(batchTableOf(projection));
  const read = sql`
    INSERT INTO ${table}
    SELECT e.session_id, e.seq, e.position, e.kind, e.recorded_at, ${readFieldColumnsSql(projection.reads, event, sql`r`)}
    FROM session_events AS e CROSS JOIN LATERAL ${rawFieldsSql(projection.reads, event)}
    WHERE e.kind IN (${readKindsSql(projection.reads)})`;
  const fields = sql.join(fieldNames(projection.reads).map((name) => sql`, ${sql.id(name)}`), sql``);
  const batch: EventBatchSql = {
    events: sql`(SELECT session_id, seq, kind, recorded_at${fields} FROM ${table} WHERE problem IS NULL)`,
    sessions: eventBatchOf(projection, sql`session_events`).sessions,
  };
  return [read, ...projection.foldStatements(batch)];
}

/** Empties the projection's batch table after the limit (the projector leaves it empty after each batch). */
export function clearBatchTableSql(projection: Projection): RawBuilder<unknown> {
  return sql`TRUNCATE ${sql.table(batchTableOf(projection))}`;
}

/** How Citus runs one statement, from its EXPLAIN. */
export interface StatementPlan {
  projection: string;
  /** Its index among the statements explained. */
  statement: number;
  /**
   * `pushed down` (a task per shard, run on the workers), `repartition` (run on the shards,
   * the rows moved worker to worker), or what takes the coordinator in: `pull to coordinator`,
   * `subplan through the coordinator`.
   */
  method: string;
  /** The tasks of its first distributed scan (one per shard when pushed down); null when the plan names none. */
  tasks: number | null;
}

/** Whether a statement runs on the shards without passing its rows through the coordinator. */
export function onTheShards(plan: StatementPlan): boolean {
  return plan.method === 'pushed down' || plan.method === 'repartition';
}

/** EXPLAIN (without running it) of one statement: how Citus runs it. */
export async function explainStatement(db: Kysely<DB>, projection: string, statement: number, builder: RawBuilder<unknown>): Promise<StatementPlan & { text: string }> {
  const { rows } = await sql<{ 'QUERY PLAN': string }>`EXPLAIN ${builder}`.execute(db);
  const text = rows.map((row) => row['QUERY PLAN']).join('\n');
  const insertSelect = text.match(/INSERT\/SELECT method: (.+)/)?.[1]?.trim();
  const subplan = text.includes('Distributed Subplan');
  let method: string;
  if (insertSelect !== undefined) method = subplan ? `${insertSelect}, after a subplan through the coordinator` : insertSelect;
  else if (subplan) method = 'subplan through the coordinator';
  else method = text.includes('Citus Adaptive') ? 'pushed down' : 'not distributed';
  const tasks = text.match(/Task Count: (\d+)/)?.[1];
  return { projection, statement, method, tasks: tasks === undefined ? null : Number(tasks), text };
}

/**
 * EXPLAINs every statement the limit times ({@link wholeLogStatements}) and throws for one
 * that Citus would not run on the shards: the limit must be what the shards can do.
 */
export async function explainDistributedLimit(db: Kysely<DB>, projections: readonly Projection[]): Promise<StatementPlan[]> {
  const plans: StatementPlan[] = [];
  for (const projection of projections) {
    for (const [index, statement] of wholeLogStatements(projection).entries()) {
      const { text, ...plan } = await explainStatement(db, projection.name, index, statement);
      if (!onTheShards(plan)) throw new Error(`${projection.name}: statement ${index + 1} of the limit does not run on the shards on Citus (${plan.method}):\n${text}`);
      plans.push(plan);
    }
  }
  return plans;
}

/**
 * EXPLAINs the fold statements over `eventBatchOf(projection, sql\`session_events\`)`, the form
 * the limit does not use on Citus, to show why. It tells how many would pass through the
 * coordinator, or that Citus refuses to plan at all (with Citus's reason).
 */
export async function explainEventBatchOf(db: Kysely<DB>, projections: readonly Projection[]): Promise<StatementPlan[]> {
  const plans: StatementPlan[] = [];
  for (const projection of projections) {
    for (const [index, statement] of projection.foldStatements(eventBatchOf(projection, sql`session_events`)).entries()) {
      try {
        const { text: _text, ...plan } = await explainStatement(db, projection.name, index, statement);
        plans.push(plan);
      } catch (error) {
        const { message, detail } = error as { message?: string; detail?: string };
        plans.push({ projection: projection.name, statement: index, method: `refused by Citus ("${message}${detail ? `: ${detail}` : ''}")`, tasks: null });
      }
    }
  }
  return plans;
}

/** `os_snapshot: 5 statements: 1 repartition (32 tasks), 4 pushed down (32 tasks); …`, for the log and the report. */
export function describePlans(plans: readonly StatementPlan[]): string {
  const byProjection = new Map<string, StatementPlan[]>();
  for (const plan of plans) byProjection.set(plan.projection, [...(byProjection.get(plan.projection) ?? []), plan]);
  return [...byProjection]
    .map(([projection, list]) => {
      const ways = new Map<string, number>();
      for (const plan of list) {
        const way = `${plan.method}${plan.tasks === null ? '' : ` (${plan.tasks} tasks)`}`;
        ways.set(way, (ways.get(way) ?? 0) + 1);
      }
      return `${projection}: ${list.length} statements: ${[...ways].map(([way, count]) => `${count} ${way}`).join(', ')}`;
    })
    .join('; ');
}
