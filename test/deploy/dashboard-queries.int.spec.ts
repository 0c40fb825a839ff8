import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KnownEventKind } from '../../src/events/session-event.js';
import type { JsonObject } from '../../src/json/json-value.js';
import { EventStore } from '../../src/store/event-store.js';
import { exampleEvent, validExamples } from '../support/example-events.js';
import { osSnapshotProjector, waitForHorizon } from '../support/projector-harness.js';
import { useTestDatabase } from '../support/test-database.js';
import { panelQueries, readDashboard } from './dashboard-panels.js';
import { expandGrafanaMacros, type MacroContext } from './grafana-macros.js';
import { connectionUrlAs, dropLoginUser } from './login-user.js';

/** Column types by what a panel needs of them (PostgreSQL type OIDs). */
const COLUMN_KINDS = {
  text: [25, 1043, 19],
  integer: [20, 23, 21],
  number: [20, 23, 21, 700, 701, 1700],
  timestamp: [1184],
  boolean: [16],
} as const;
type ColumnKind = keyof typeof COLUMN_KINDS;

interface PanelExpectation {
  columns: [name: string, kind: ColumnKind][];
  /** For a time series: the sum of each value column over the time range. */
  totals?: Record<string, number>;
}

const memoryKinds = ['page_out', 'page_in', 'memory_written', 'memory_queried', 'memory_validation_failed', 'memory_retrieval_result'];

/** What each panel of the dashboard must get, by title; a panel missing here fails the test. */
const expectations: Record<string, PanelExpectation> = {
  'Sessions suspended now': { columns: [['suspended', 'integer']] },
  'Processes running': { columns: [['running', 'integer']] },
  'Projection lag': { columns: [['lag_events', 'integer'], ['lag_seconds', 'number']] },
  'Sessions suspended now, and why': {
    columns: [['session_id', 'text'], ['reason', 'text'], ['pending_calls', 'text'], ['suspend_turn', 'integer'], ['suspend_seq', 'integer'], ['suspended_at', 'timestamp']],
  },
  'Why sessions are suspended': { columns: [['reason', 'text'], ['sessions', 'integer']] },
  'Tools gated': { columns: [['time', 'timestamp'], ['tool_gated', 'integer']], totals: { tool_gated: 2 } },
  'Memory activity': {
    columns: [['time', 'timestamp'], ...memoryKinds.map((kind): [string, ColumnKind] => [kind, 'integer'])],
    totals: { page_out: 2, page_in: 1, memory_written: 1, memory_queried: 1, memory_validation_failed: 1, memory_retrieval_result: 1 },
  },
  'Processes by state': { columns: [['state', 'text'], ['processes', 'integer'], ['sessions', 'integer']] },
  'Signals by disposition': { columns: [['disposition', 'text'], ['signals', 'integer'], ['sessions', 'integer'], ['max_queue_depth', 'integer']] },
  'Budgets exceeded, by budget': { columns: [['budget', 'text'], ['exceeded', 'integer'], ['sessions', 'integer']] },
  Projection: {
    columns: [
      ['projection', 'text'],
      ['checkpoint_position', 'integer'],
      ['events_applied', 'integer'],
      ['lag_events', 'integer'],
      ['lag_seconds', 'number'],
      ['leader', 'text'],
      ['leader_live', 'boolean'],
      ['updated_at', 'timestamp'],
    ],
  },
  'Sessions the projection stopped': {
    columns: [['session_id', 'text'], ['blocked_at_seq', 'integer'], ['kind', 'text'], ['reason', 'text'], ['problem', 'text'], ['blocked_at', 'timestamp']],
  },
  'Process states per session': { columns: [['session_id', 'text'], ['running', 'integer'], ['joined', 'integer'], ['failed', 'integer'], ['other', 'integer']] },
  Sessions: {
    columns: [
      ['session_id', 'text'],
      ['events', 'integer'],
      ['projected_seq', 'integer'],
      ['suspended', 'boolean'],
      ['last_suspend_reason', 'text'],
      ['processes', 'integer'],
      ['running_processes', 'integer'],
      ['tool_gated_count', 'integer'],
      ['signals', 'integer'],
      ['budget_exceeded', 'integer'],
      ['page_out_count', 'integer'],
      ['page_in_count', 'integer'],
      ['last_recorded_at', 'timestamp'],
    ],
  },
};

const testDb = useTestDatabase();
const dashboard = readDashboard();
const queries = panelQueries(dashboard);
/** A login user in os_audit_reader, as Grafana's data source user is. */
const reader = { name: `os_audit_dashboard_${randomBytes(4).toString('hex')}`, password: randomBytes(12).toString('hex') };
let macroContext: MacroContext;

/** Runs a query as the reader, with pg's raw values (every type kept as PostgreSQL sends it). */
async function asReader(text: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: connectionUrlAs(testDb.url, reader.name, reader.password), application_name: 'os-audit-dashboard-test' });
  await client.connect();
  try {
    return await client.query(text);
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  await sql`CREATE ROLE ${sql.id(reader.name)} LOGIN PASSWORD ${sql.lit(reader.password)} IN ROLE os_audit_reader`.execute(testDb.db);
  const store = new EventStore(testDb.db);
  // Every kind of the contract once (a suspend and its resume among them) ...
  await store.append('dash-all', (Object.keys(validExamples) as KnownEventKind[]).map((kind) => exampleEvent(kind)));
  // ... and a session suspended now, with a running child, a signal and a budget of its own.
  const runningChild: JsonObject = { ...exampleEvent('agent_process_changed'), agent_id: 'child-2', state: 'running' };
  delete runningChild.result_termination;
  await store.append('dash-suspended', [
    runningChild,
    exampleEvent('tool_gated'),
    { ...exampleEvent('signal_disposed'), disposition: 'interrupt', queue_depth: 3 },
    { ...exampleEvent('budget_exceeded'), budget: 'time' },
    exampleEvent('page_out'),
    { kind: 'suspended', turn: 8, reason: 'ask_user', pending_calls: ['c9'] },
  ]);
  // ... and a session the projection stops at an event it cannot read.
  await store.append('dash-stopped', [{ kind: 'resumed', turn: 'nine' }]);
  await waitForHorizon(testDb.db);
  await osSnapshotProjector(testDb.db).catchUp();
  const { rows } = await sql<{ now: Date }>`SELECT now() AS now`.execute(testDb.db);
  const now = rows[0]!.now.getTime();
  macroContext = { from: new Date(now - 3_600_000), to: new Date(now + 3_600_000), interval: '1m' };
});

afterAll(async () => {
  await dropLoginUser(testDb.db, reader.name);
});

describe('the Grafana dashboard', () => {
  it('has an expectation here for each of its panels, and a panel for each expectation', () => {
    expect(queries.map(({ panel }) => panel.title).sort()).toEqual(Object.keys(expectations).sort());
  });

  it('reads as a member of os_audit_reader, who may not read the log itself', async () => {
    await expect(asReader('SELECT 1 FROM session_events LIMIT 1')).rejects.toThrow(/permission denied/);
  });

  it.each(queries.map((query) => [query.panel.title, query] as const))('%s: returns rows of the expected columns to the reader', async (title, query) => {
    const expectation = expectations[title]!;
    const result = await asReader(expandGrafanaMacros(query.rawSql, macroContext));
    expect(result.rows.length, 'rows').toBeGreaterThan(0);
    expect(result.fields.map((field) => field.name)).toEqual(expectation.columns.map(([name]) => name));
    for (const [index, [name, kind]] of expectation.columns.entries()) {
      expect(COLUMN_KINDS[kind] as readonly number[], `column ${name}: type oid ${result.fields[index]!.dataTypeID}`).toContain(result.fields[index]!.dataTypeID);
    }
    if (query.format === 'time_series') {
      // Grafana's time series: a "time" column of timestamps, ascending, then numbers.
      expect(expectation.columns[0]).toEqual(['time', 'timestamp']);
      expect(expectation.columns.slice(1).every(([, kind]) => kind === 'integer' || kind === 'number')).toBe(true);
      const times = result.rows.map((row: { time: Date }) => row.time.getTime());
      expect(times).toEqual([...times].sort((a, b) => a - b));
    }
    for (const [column, total] of Object.entries(expectation.totals ?? {})) {
      expect(result.rows.reduce((sum: number, row: Record<string, string>) => sum + Number(row[column]), 0), column).toBe(total);
    }
  });

  it('shows the suspended session, and why, in its suspended-sessions table', async () => {
    const query = queries.find(({ panel }) => panel.title === 'Sessions suspended now, and why')!;
    const { rows } = await asReader(expandGrafanaMacros(query.rawSql, macroContext));
    expect(rows).toEqual([expect.objectContaining({ session_id: 'dash-suspended', reason: 'ask_user', pending_calls: 'c9' })]);
  });
});
