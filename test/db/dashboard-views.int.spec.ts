import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { foldStoredOsSnapshot } from '../../src/deprecated-os-snapshot.js';
import type { KnownEventKind } from '../../src/events/session-event.js';
import type { JsonObject } from '../../src/json/json-value.js';
import { readProjectionStatus } from '../../src/projector/projection-status.js';
import { EventStore } from '../../src/store/event-store.js';
import type { StoredEvent } from '../../src/stored-log/stored-event.js';
import { exampleEvent } from '../support/example-events.js';
import { osSnapshotProjector } from '../support/projector-harness.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();

function event(kind: KnownEventKind, fields: JsonObject = {}): JsonObject {
  return { ...exampleEvent(kind), ...fields };
}

function processChanged(turn: number, agentId: string, parent: string, state: string): JsonObject {
  return event('agent_process_changed', { turn, agent_id: agentId, parent_session_id: parent, state });
}

/** Suspended and resumed again; processes running, joined and failed; every counter. */
const PARENT: JsonObject[] = [
  event('run_started'),
  processChanged(1, 'child-1', 'parent', 'running'),
  processChanged(1, 'child-2', 'parent', 'running'),
  event('tool_gated', { turn: 2 }),
  event('signal_disposed', { turn: 2, signal_id: 'sig-a', disposition: 'queue', queue_depth: 1 }),
  event('suspended', { turn: 3, reason: 'sub_agent_await', pending_calls: ['child-1'] }),
  processChanged(4, 'child-1', 'parent', 'joined'),
  event('resumed', { turn: 5 }),
  event('page_out', { turn: 3 }),
  event('page_in', { turn: 4 }),
  event('memory_written', { turn: 7 }),
  event('memory_written', { turn: 7, memory_id: 'm2' }),
  event('memory_queried'),
  event('memory_validation_failed'),
  event('memory_retrieval_result'),
  event('budget_exceeded', { turn: 6, budget: 'tokens' }),
  event('signal_disposed', { turn: 6, signal_id: 'sig-b', disposition: 'run', queue_depth: 0 }),
  processChanged(6, 'child-3', 'parent', 'failed'),
  event('tool_gated', { turn: 7 }),
];

/** Resumed once, suspended again: suspended now. */
const WAITING: JsonObject[] = [
  event('suspended', { turn: 1, reason: 'ask_user', pending_calls: ['c1'] }),
  event('resumed', { turn: 2 }),
  event('signal_disposed', { turn: 2, signal_id: 'sig-x', disposition: 'interrupt', queue_depth: 3 }),
  event('budget_exceeded', { turn: 3, budget: 'wall_clock' }),
  event('budget_exceeded', { turn: 3, budget: 'tokens' }),
  processChanged(3, 'child-9', 'waiting', 'running'),
  event('suspended', { turn: 4, reason: 'ask_user', pending_calls: ['c7', 'c8'] }),
  event('signal_disposed', { turn: 4, signal_id: 'sig-y', disposition: 'queue', queue_depth: 2 }),
];

/** Nothing the snapshot counts. */
const QUIET: JsonObject[] = [event('llm_completed', { turn: 1 }), event('llm_completed', { turn: 2 })];

const LOGS = { parent: PARENT, waiting: WAITING, quiet: QUIET };

async function storedLog(sessionId: string): Promise<StoredEvent[]> {
  const events: StoredEvent[] = [];
  for await (const stored of new EventStore(testDb.db).readSession(sessionId)) events.push(stored);
  return events;
}

async function recordedAt(sessionId: string, seq: number): Promise<Date> {
  return (await storedLog(sessionId))[seq]!.recordedAt;
}

async function lagRow() {
  return testDb.db.selectFrom('os_projection_lag').selectAll().where('projection', '=', 'os_snapshot').executeTakeFirstOrThrow();
}

/** The ```sql blocks of docs/audit-queries.md that follow a `<!-- audit-query -->` line. */
function documentedAuditQueries(): string[] {
  const page = readFileSync(fileURLToPath(new URL('../../docs/audit-queries.md', import.meta.url)), 'utf8');
  return [...page.matchAll(/^<!-- audit-query -->\r?\n```sql\r?\n([\s\S]*?)^```/gm)].map((match) => match[1]!.trim());
}

describe('the dashboard views', () => {
  beforeAll(async () => {
    const store = new EventStore(testDb.db);
    // Two appends: the session's first and last recorded_at differ.
    await store.append('parent', PARENT.slice(0, 10));
    await store.append('parent', PARENT.slice(10));
    await store.append('waiting', WAITING);
    await store.append('quiet', QUIET);
  });

  it('os_projection_lag counts the backlog before the projector runs, and nothing after', async () => {
    const events = PARENT.length + WAITING.length + QUIET.length;
    const before = await lagRow();
    expect(before).toMatchObject({ checkpoint_position: 0, events_applied: 0, lag_events: events, leader: null, leader_live: false });
    expect(before.lag_seconds).toBeGreaterThan(0);
    const status = await readProjectionStatus(testDb.db, 'os_snapshot');
    expect(status.behind.events).toBe(events);

    const projector = osSnapshotProjector(testDb.db, { owner: 'views-test' });
    await projector.catchUp();
    const { last } = await testDb.db.selectFrom('session_events').select((eb) => eb.fn.max('position').as('last')).executeTakeFirstOrThrow();
    expect(await lagRow()).toMatchObject({
      checkpoint_position: last,
      events_applied: events,
      lag_events: 0,
      lag_seconds: 0,
      leader: 'views-test',
      leader_live: false, // released when the catch-up ended
    });
  });

  it('os_session_overview: one row per session, with exact values', async () => {
    const rows = await testDb.db.selectFrom('os_session_overview').selectAll().orderBy('session_id').execute();
    const zeros = {
      tool_gated_count: 0,
      memory_written_count: 0,
      memory_queried_count: 0,
      memory_validation_failed_count: 0,
      memory_retrieval_result_count: 0,
      page_out_count: 0,
      page_in_count: 0,
      blocked_at_seq: null,
      blocked_problem: null,
      skipped_events: 0,
    };
    expect(rows).toEqual([
      {
        session_id: 'parent',
        events: 19,
        first_recorded_at: await recordedAt('parent', 0),
        last_recorded_at: await recordedAt('parent', 18),
        projected_seq: 18,
        suspended: false,
        last_suspend_reason: 'sub_agent_await',
        processes: 3,
        running_processes: 1,
        signals: 2,
        budget_exceeded: 1,
        tool_gated_count: 2,
        memory_written_count: 2,
        memory_queried_count: 1,
        memory_validation_failed_count: 1,
        memory_retrieval_result_count: 1,
        page_out_count: 1,
        page_in_count: 1,
        blocked_at_seq: null,
        blocked_problem: null,
        skipped_events: 0,
      },
      {
        session_id: 'quiet',
        events: 2,
        first_recorded_at: await recordedAt('quiet', 0),
        last_recorded_at: await recordedAt('quiet', 1),
        projected_seq: 1,
        suspended: false,
        last_suspend_reason: null,
        processes: 0,
        running_processes: 0,
        signals: 0,
        budget_exceeded: 0,
        ...zeros,
      },
      {
        session_id: 'waiting',
        events: 8,
        first_recorded_at: await recordedAt('waiting', 0),
        last_recorded_at: await recordedAt('waiting', 7),
        projected_seq: 7,
        suspended: true,
        last_suspend_reason: 'ask_user',
        processes: 1,
        running_processes: 1,
        signals: 2,
        budget_exceeded: 2,
        ...zeros,
      },
    ]);
    expect(rows[0]!.first_recorded_at!.getTime()).toBeLessThan(rows[0]!.last_recorded_at!.getTime());
  });

  it('os_session_overview agrees with the in-memory fold of each log', async () => {
    const store = new EventStore(testDb.db);
    for (const sessionId of Object.keys(LOGS)) {
      const { snapshot, lastSeq } = await foldStoredOsSnapshot(store, sessionId);
      const kinds = (await storedLog(sessionId)).map((stored) => stored.kind);
      const row = await testDb.db.selectFrom('os_session_overview').selectAll().where('session_id', '=', sessionId).executeTakeFirstOrThrow();
      expect(row, sessionId).toMatchObject({
        events: lastSeq + 1,
        projected_seq: lastSeq,
        suspended: kinds.lastIndexOf('suspended') > kinds.lastIndexOf('resumed'),
        last_suspend_reason: snapshot.last_suspend?.reason ?? null,
        processes: snapshot.process_by_agent.length,
        running_processes: snapshot.process_by_agent.filter((process) => process.state === 'running').length,
        signals: snapshot.signals.length,
        budget_exceeded: snapshot.budget_exceeded.length,
        tool_gated_count: snapshot.tool_gated_count,
        memory_written_count: snapshot.memory_written_count,
        memory_queried_count: snapshot.memory_queried_count,
        memory_validation_failed_count: snapshot.memory_validation_failed_count,
        memory_retrieval_result_count: snapshot.memory_retrieval_result_count,
        page_out_count: snapshot.page_out_count,
        page_in_count: snapshot.page_in_count,
      });
    }
  });

  it('os_process_states and os_processes_by_state: processes by state, per session and for the fleet', async () => {
    expect(await testDb.db.selectFrom('os_process_states').selectAll().orderBy('session_id').orderBy('state').execute()).toEqual([
      { session_id: 'parent', state: 'failed', processes: 1 },
      { session_id: 'parent', state: 'joined', processes: 1 },
      { session_id: 'parent', state: 'running', processes: 1 },
      { session_id: 'waiting', state: 'running', processes: 1 },
    ]);
    expect(await testDb.db.selectFrom('os_processes_by_state').selectAll().orderBy('state').execute()).toEqual([
      { state: 'failed', processes: 1, sessions: 1 },
      { state: 'joined', processes: 1, sessions: 1 },
      { state: 'running', processes: 2, sessions: 2 },
    ]);
  });

  it('os_suspended_sessions: only the sessions suspended now, with their last suspend', async () => {
    expect(await testDb.db.selectFrom('os_suspended_sessions').selectAll().execute()).toEqual([
      {
        session_id: 'waiting',
        reason: 'ask_user',
        pending_calls: ['c7', 'c8'],
        suspend_seq: 6,
        suspend_turn: 4,
        suspended_at: await recordedAt('waiting', 6),
      },
    ]);
  });

  it('os_signal_dispositions: signals, sessions and the deepest queue per disposition', async () => {
    expect(await testDb.db.selectFrom('os_signal_dispositions').selectAll().orderBy('disposition').execute()).toEqual([
      { disposition: 'interrupt', signals: 1, sessions: 1, max_queue_depth: 3 },
      { disposition: 'queue', signals: 2, sessions: 2, max_queue_depth: 2 },
      { disposition: 'run', signals: 1, sessions: 1, max_queue_depth: 0 },
    ]);
  });

  it('os_budget_events: each budget event with the time it was recorded', async () => {
    expect(await testDb.db.selectFrom('os_budget_events').selectAll().orderBy('session_id').orderBy('seq').execute()).toEqual([
      { session_id: 'parent', seq: 15, turn: 6, budget: 'tokens', recorded_at: await recordedAt('parent', 15) },
      { session_id: 'waiting', seq: 3, turn: 3, budget: 'wall_clock', recorded_at: await recordedAt('waiting', 3) },
      { session_id: 'waiting', seq: 4, turn: 3, budget: 'tokens', recorded_at: await recordedAt('waiting', 4) },
    ]);
  });

  it('os_event_activity: every stored event without its body', async () => {
    for (const [sessionId, log] of Object.entries(LOGS)) {
      const rows = await testDb.db.selectFrom('os_event_activity').selectAll().where('session_id', '=', sessionId).orderBy('seq').execute();
      const stored = await storedLog(sessionId);
      expect(rows).toEqual(
        stored.map((event, seq) => ({
          recorded_at: event.recordedAt,
          session_id: sessionId,
          seq,
          kind: log[seq]!.kind,
          turn: typeof log[seq]!.turn === 'number' ? log[seq]!.turn : null,
        })),
      );
    }
    expect(await testDb.db.selectFrom('os_event_activity').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).toEqual({ n: 29 });
  });

  it('shows a session not projected yet with its log and zero counts, and the lag until the projector catches up', async () => {
    await new EventStore(testDb.db).append('late', [event('tool_gated', { turn: 1 }), event('budget_exceeded', { turn: 1 }), event('suspended', { turn: 2 })]);
    expect(await testDb.db.selectFrom('os_session_overview').selectAll().where('session_id', '=', 'late').executeTakeFirstOrThrow()).toMatchObject({
      events: 3,
      projected_seq: null,
      suspended: false,
      last_suspend_reason: null,
      processes: 0,
      signals: 0,
      budget_exceeded: 0,
      tool_gated_count: 0,
    });
    const behind = await lagRow();
    expect(behind).toMatchObject({ lag_events: 3, events_applied: 29 });
    expect(behind.lag_seconds).toBeGreaterThan(0);

    await osSnapshotProjector(testDb.db).catchUp();
    expect(await lagRow()).toMatchObject({ lag_events: 0, lag_seconds: 0, events_applied: 32 });
    expect(await testDb.db.selectFrom('os_session_overview').selectAll().where('session_id', '=', 'late').executeTakeFirstOrThrow()).toMatchObject({
      projected_seq: 2,
      suspended: true,
      budget_exceeded: 1,
      tool_gated_count: 1,
    });
  });

  it("runs every audit query of the docs as os_audit_reader, each returning rows (docs/audit-queries.md: a ```sql block after '<!-- audit-query -->')", async () => {
    const queries = documentedAuditQueries();
    expect(queries.length).toBeGreaterThanOrEqual(5);
    // A session the projection stops (its turn is not a number), so that the query about them has rows too.
    await new EventStore(testDb.db).append('stopped', [event('budget_exceeded', { turn: 'one' })]);
    await osSnapshotProjector(testDb.db).catchUp();
    for (const query of queries) {
      const rows = await testDb.db.transaction().execute(async (trx) => {
        await sql`SET LOCAL ROLE os_audit_reader`.execute(trx);
        return (await sql.raw(query).execute(trx)).rows;
      });
      expect(rows.length, query).toBeGreaterThan(0);
    }
  });
});
