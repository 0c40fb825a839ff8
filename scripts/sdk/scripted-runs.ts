/**
 * The v0.2.60 runtime (its built package, as an application imports it) driven by a scripted
 * model through a few sessions. It runs once on the SDK's `FileSessionLog` and once on
 * os-audit's `PostgresSessionLog` with its `kernelJournal`: the sessions must come out the same.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { KERNEL_PRIMITIVES_V0_2_60, PostgresSessionLog } from '../../src/session-log/postgres-session-log.js';
import { sdkCopy } from './sdk-jest.js';

/** What the runner needs of the SDK's package (its own types are not visible from here). */
interface SessionLogLike {
  read(sessionId: string): Promise<Array<{ seq: number; event: { kind: string } }>>;
}
interface Sdk {
  RuntimeRunner: new (options: Record<string, unknown>) => { run(request: { sessionId: string; goal: string }): AsyncIterable<StreamEvent> };
  LocalExecutionPlane: new () => { register(tool: unknown): unknown };
  FileSessionLog: new (dir: string) => SessionLogLike;
  tool: (name: string, description: string, schema: object, run: (args: Record<string, unknown>) => string) => unknown;
  runFanout: (options: Record<string, unknown>) => Promise<{ synthesis: string; outputs: Record<string, string> }>;
}
type StreamEvent = { type: string } & Record<string, unknown>;

export async function loadSdk(): Promise<Sdk> {
  return (await import(pathToFileURL(path.join(sdkCopy('0.2.60').nodeDir, 'dist', 'index.js')).href)) as Sdk;
}

/**
 * A model that answers each call with the next step of its script. The step is the number of
 * assistant turns already in the context. So concurrent sub-agents sharing it each follow the
 * script from their own history, whatever order they run in.
 */
function scriptedModel(steps: StreamEvent[][]) {
  return {
    async complete() {
      return { role: 'assistant', content: 'unused', toolCalls: [] };
    },
    async *stream(context: { turns: Array<{ role: string }> }): AsyncIterable<StreamEvent> {
      const step = context.turns.filter((message) => message.role === 'assistant').length;
      yield* steps[Math.min(step, steps.length - 1)]!;
    },
  };
}

const text = (delta: string): StreamEvent => ({ type: 'text_delta', delta });
const toolCall = (id: string, name: string, args: Record<string, unknown>): StreamEvent => ({ type: 'tool_call', id, name, arguments: args });

/** One scripted session: it drives the runtime on `sessionLog` and gives back how it ended. */
interface Scenario {
  name: string;
  run(sdk: Sdk, sessionLog: SessionLogLike): Promise<unknown>;
}

/** The stream's `done` event: the run's final status as the runtime reports it. */
async function finalStatus(stream: AsyncIterable<StreamEvent>): Promise<unknown> {
  let done: StreamEvent | undefined;
  for await (const event of stream) if (event.type === 'done') done = event;
  return done;
}

function plane(sdk: Sdk) {
  const tools = new sdk.LocalExecutionPlane();
  tools.register(sdk.tool('ping', 'Ping', { type: 'object', properties: { n: { type: 'number' } } }, (args) => `pong ${String(args['n'])}`));
  tools.register(sdk.tool('needs_approval', 'Needs approval', { type: 'object', properties: {} }, () => 'approved and done'));
  return tools;
}

const scenarios: Scenario[] = [
  {
    // Tool calls, and one gated by an ask_user rule: tool_gated, suspended (ask_user), resumed.
    name: 'tools-approval',
    run: (sdk, sessionLog) =>
      finalStatus(
        new sdk.RuntimeRunner({
          provider: scriptedModel([
            [toolCall('c1', 'ping', { n: 1 })],
            [text('then '), toolCall('c2', 'needs_approval', {})],
            [text('done')],
          ]),
          sessionLog,
          executionPlane: plane(sdk),
          maxTokens: 4096,
          maxTurns: 6,
          baselineToolIds: ['ping', 'needs_approval'],
          governancePolicy: { rules: [{ pattern: 'needs_approval', action: 'ask_user' }] },
          onPermissionRequest: () => ({ approved: true, responder: 'script' }),
        }).run({ sessionId: 'tools-approval', goal: 'ping, then ask for approval' }),
      ),
  },
  {
    // A denied approval: the call is answered as denied and the model goes on.
    name: 'tools-denied',
    run: (sdk, sessionLog) =>
      finalStatus(
        new sdk.RuntimeRunner({
          provider: scriptedModel([[toolCall('d1', 'needs_approval', {})], [text('understood')]]),
          sessionLog,
          executionPlane: plane(sdk),
          maxTokens: 4096,
          maxTurns: 4,
          baselineToolIds: ['needs_approval'],
          governancePolicy: { rules: [{ pattern: 'needs_approval', action: 'ask_user' }] },
          onPermissionRequest: () => ({ approved: false, responder: 'script' }),
        }).run({ sessionId: 'tools-denied', goal: 'ask, and be told no' }),
      ),
  },
  {
    // The same session run twice: the second run reads the first one's events back from the log.
    name: 'continued',
    run: async (sdk, sessionLog) => {
      const runner = () =>
        new sdk.RuntimeRunner({
          provider: scriptedModel([[toolCall('p1', 'ping', { n: 7 })], [text('first answer')], [text('second answer')]]),
          sessionLog,
          executionPlane: plane(sdk),
          maxTokens: 4096,
          maxTurns: 4,
          baselineToolIds: ['ping'],
        });
      const first = await finalStatus(runner().run({ sessionId: 'continued', goal: 'ping once' }));
      const second = await finalStatus(runner().run({ sessionId: 'continued', goal: 'and now answer again' }));
      return [first, second];
    },
  },
  {
    // Sub-agents: two parallel workers and a synthesis node, each a session of its own.
    name: 'fanout',
    run: (sdk, sessionLog) =>
      sdk.runFanout({
        provider: scriptedModel([[text('worker output')]]),
        tasks: ['look at a', 'look at b'],
        synthesize: 'combine the findings',
        sessionLog,
        sessionId: 'fanout',
        maxTokens: 4096,
      }),
  },
];

export interface ScriptedRun {
  /** Each session's events as the log reads them back, by session id. */
  sessions: Map<string, unknown[]>;
  /** Each scenario's final status, by scenario. */
  statuses: Map<string, unknown>;
}

/** Runs every scenario on `sessionLog`, then reads back the sessions `sessionIds()` names. */
async function runScenarios(sdk: Sdk, sessionLog: SessionLogLike, sessionIds: () => Promise<string[]>): Promise<ScriptedRun> {
  const statuses = new Map<string, unknown>();
  for (const scenario of scenarios) statuses.set(scenario.name, await scenario.run(sdk, sessionLog));
  const sessions = new Map<string, unknown[]>();
  for (const sessionId of (await sessionIds()).sort()) {
    sessions.set(sessionId, (await sessionLog.read(sessionId)).map((entry) => entry.event));
  }
  return { sessions, statuses };
}

/** The scenarios on the SDK's `FileSessionLog` in `dir` (which `os-audit import` can read afterwards). */
export function runOnFiles(sdk: Sdk, dir: string): Promise<ScriptedRun> {
  const sessionLog = new sdk.FileSessionLog(dir);
  return runScenarios(sdk, sessionLog, async () =>
    readdirSync(dir)
      .filter((file) => file.endsWith('.jsonl'))
      .map((file) => file.slice(0, -'.jsonl'.length)),
  );
}

/** The scenarios on `PostgresSessionLog` (and, through it, its `kernelJournal`) in the database of `connectionString`. */
export async function runOnPostgres(sdk: Sdk, connectionString: string): Promise<ScriptedRun> {
  const sessionLog = PostgresSessionLog.connect({ connectionString, primitives: KERNEL_PRIMITIVES_V0_2_60, applicationName: 'os-audit-sdk-scripted' });
  try {
    return await runScenarios(sdk, sessionLog, async () =>
      (await sessionLog.db.selectFrom('sessions').select('session_id').execute()).map((row) => row.session_id),
    );
  } finally {
    await sessionLog.close();
  }
}

/**
 * The differences between two runs, after the one field that is legitimately run-dependent:
 * `run_started.run_id`, a fresh UUID per run (and wherever the runtime repeats it, e.g. in
 * operation ids), replaced by `<run N>` in the order the runs started.
 */
export function compareRuns(files: ScriptedRun, postgres: ScriptedRun): string[] {
  const differences: string[] = [];
  const left = normalized(files);
  const right = normalized(postgres);
  const sessionIds = new Set([...files.sessions.keys(), ...postgres.sessions.keys()]);
  for (const sessionId of sessionIds) {
    const a = left.sessions[sessionId];
    const b = right.sessions[sessionId];
    if (a === undefined || b === undefined) {
      differences.push(`session ${sessionId}: only on ${a === undefined ? 'PostgreSQL' : 'files'}`);
      continue;
    }
    const length = Math.max(a.length, b.length);
    for (let seq = 0; seq < length; seq++) {
      if (JSON.stringify(a[seq]) !== JSON.stringify(b[seq])) {
        differences.push(`session ${sessionId} seq ${seq}: files ${JSON.stringify(a[seq])}, PostgreSQL ${JSON.stringify(b[seq])}`);
      }
    }
  }
  for (const scenario of scenarios) {
    const a = JSON.stringify(left.statuses[scenario.name]);
    const b = JSON.stringify(right.statuses[scenario.name]);
    if (a !== b) differences.push(`status of ${scenario.name}: files ${a}, PostgreSQL ${b}`);
  }
  return differences;
}

function normalized(run: ScriptedRun): { sessions: Record<string, unknown[]>; statuses: Record<string, unknown> } {
  const runIds: string[] = [];
  for (const events of run.sessions.values()) {
    for (const event of events as Array<{ kind: string; run_id?: string }>) {
      if (event.kind === 'run_started' && typeof event.run_id === 'string') runIds.push(event.run_id);
    }
  }
  let json = JSON.stringify({ sessions: Object.fromEntries(run.sessions), statuses: Object.fromEntries(run.statuses) });
  runIds.forEach((runId, index) => (json = json.replaceAll(runId, `<run ${index}>`)));
  return JSON.parse(json) as { sessions: Record<string, unknown[]>; statuses: Record<string, unknown> };
}

export function countEvents(run: ScriptedRun): number {
  return [...run.sessions.values()].reduce((sum, events) => sum + events.length, 0);
}
