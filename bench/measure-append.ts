import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { storeIsDistributed } from '../src/db/distributed-store.js';
import { openDatabase } from '../src/db/open-database.js';
import type { DB } from '../src/db/schema.js';
import { importLogs } from '../src/import/import-logs.js';
import { EventStore } from '../src/store/event-store.js';
import { otherLoad } from './other-load.js';
import type { ScratchDatabase } from '../test/support/scratch-database.js';
import { checkpointClient, checkpointDatabase } from './checkpoint.js';
import { chunked, copyInto, copyLine, eventCopyColumns, probeEventLayout } from './copy-rows.js';
import { type CorpusRow, CorpusStats, SessionFactory } from './corpus.js';
import { median, secondsSince } from './stats.js';

/** Events appended in the append measurements, grouped by session. */
export interface AppendCorpus {
  sessions: { sessionId: string; rows: CorpusRow[] }[];
  events: number;
  sessionLength: number;
  stats: CorpusStats;
}

/**
 * The append corpus: `sessions` sessions of `sessionLength` events (1,000, so that a batch of
 * 1,000 is one whole session append), of the same generator as the catch-up corpus.
 */
export function makeAppendCorpus(seed: string, sessions: number, sessionLength: number): AppendCorpus {
  const factory = new SessionFactory({ seed, prefix: 'ap' });
  const stats = new CorpusStats();
  const result: AppendCorpus['sessions'] = [];
  for (let i = 0; i < sessions; i++) {
    const script = factory.session(sessionLength);
    const rows: CorpusRow[] = [];
    while (!script.done) {
      const row = script.next();
      stats.add(row);
      rows.push(row);
    }
    result.push({ sessionId: script.sessionId, rows });
  }
  return { sessions: result, events: sessions * sessionLength, sessionLength, stats };
}

/** Writes the corpus as the runtime SDKs do: a directory of `<session_id>.jsonl`. */
export function writeImportDirectory(corpus: AppendCorpus, directory: string): void {
  rmSync(directory, { recursive: true, force: true });
  mkdirSync(directory, { recursive: true });
  for (const session of corpus.sessions) {
    const lines = session.rows.map((row) => `{"seq":${row.seq},"event":${row.json}}\n`);
    writeFileSync(path.join(directory, `${session.sessionId}.jsonl`), lines.join(''));
  }
}

/**
 * Writes the corpus as one import stream (`{"session_id":…,"seq":N,"event":{…}}` a line), the
 * sessions interleaved event by event as a runtime running them all at once would write them.
 */
export function writeImportStream(corpus: AppendCorpus, file: string): void {
  const lines: string[] = [];
  for (let i = 0; i < corpus.sessionLength; i++) {
    for (const session of corpus.sessions) {
      const row = session.rows[i];
      if (row !== undefined) lines.push(`{"session_id":${JSON.stringify(session.sessionId)},"seq":${row.seq},"event":${row.json}}\n`);
    }
  }
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, lines.join(''));
}

/** One append measurement: the events stored and the seconds it took. */
export interface AppendSample {
  events: number;
  seconds: number;
  eventsPerSecond: number;
  /**
   * CPU seconds this process (the client: validation, encoding, the driver) spent meanwhile;
   * null when the client is a process of its own (the CLI).
   */
  clientCpuSeconds: number | null;
}

export type AppendMethod = (
  | { type: 'copy' }
  | { type: 'api'; batch: number; writers: number }
  | { type: 'import'; directory: string }
  /** `os-audit import PATH` run by `cliEntry`, timed from spawn to exit; `label` says which way (in the figure's name). */
  | { type: 'import-cli'; path: string; cliEntry: string; label: string }
) & {
  /** Into a database whose hash chain is off (see {@link disableChain}), for the same method's figure without it. */
  withoutChain?: true;
};

/** A new migrated database to append into (on one server, or on a Citus cluster), dropped after each sample. */
export type NewDatabase = () => Promise<ScratchDatabase>;

export function methodName(method: AppendMethod): string {
  return method.withoutChain ? `${baseMethodName(method)}, without the hash chain` : baseMethodName(method);
}

function baseMethodName(method: AppendMethod): string {
  switch (method.type) {
    case 'copy':
      return 'COPY limit';
    case 'api':
      return `append API, batches of ${method.batch}, ${method.writers} writer${method.writers === 1 ? '' : 's'}`;
    case 'import':
      return 'import (importLogs in-process)';
    case 'import-cli':
      return `import (${method.label}, start-up included)`;
  }
}

/**
 * Measures one method on a new migrated database (every sample starts from empty tables),
 * after a CHECKPOINT (of every node) so that no earlier write is flushed on its time.
 */
export async function measureAppend(newDatabase: NewDatabase, corpus: AppendCorpus, method: AppendMethod): Promise<AppendSample> {
  const scratch = await newDatabase();
  otherLoad.addDatabase(scratch.name);
  try {
    if (method.withoutChain) await disableChain(scratch.db);
    const { seconds, cpuSeconds } = await timeMethod(scratch, corpus, method);
    const table = method.type === 'copy' ? 'bench_copy_target' : 'session_events';
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(table)}`.execute(scratch.db);
    if (rows[0]!.n !== corpus.events) throw new Error(`${methodName(method)} stored ${rows[0]!.n} events, not ${corpus.events}`);
    return { events: corpus.events, seconds, eventsPerSecond: corpus.events / seconds, clientCpuSeconds: cpuSeconds };
  } finally {
    await scratch.drop();
  }
}

/**
 * Turns the hash chain off in a bench database, for the figures without it. That is the row
 * trigger that hashes each event (and checks its turn and exact text), the statement trigger
 * that moves the heads' hashes, and the check of a head's hash. Everything else stays as migrated.
 */
export async function disableChain(db: Kysely<DB>): Promise<void> {
  await sql`ALTER TABLE session_events DISABLE TRIGGER session_events_chain, DISABLE TRIGGER session_events_set_head_hashes`.execute(db);
  await sql`ALTER TABLE sessions DISABLE TRIGGER sessions_head_hash_of_last_event`.execute(db);
}

interface Timing {
  seconds: number;
  cpuSeconds: number | null;
}

/** Wall and CPU time of `work` in this process. */
async function timed(work: () => Promise<unknown>): Promise<Timing> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  await work();
  const seconds = secondsSince(started);
  const used = process.cpuUsage(cpu);
  return { seconds, cpuSeconds: (used.user + used.system) / 1e6 };
}

/** Wall time of a CLI run (`node dist/src/cli/main.js ARGS`) from spawn to exit; its output on failure. */
export async function timedCli(cliEntry: string, args: readonly string[], url: string): Promise<Timing & { cpuSeconds: null }> {
  const started = performance.now();
  const child = spawn(process.execPath, [cliEntry, ...args], { env: { ...process.env, DATABASE_URL: url }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  const seconds = secondsSince(started);
  if (code !== 0) throw new Error(`os-audit ${args.join(' ')} exited with ${code}:\n${output}`);
  return { seconds, cpuSeconds: null };
}

async function timeMethod(scratch: ScratchDatabase, corpus: AppendCorpus, method: AppendMethod): Promise<Timing> {
  switch (method.type) {
    case 'copy': {
      // An identical table (columns, defaults, identity, constraints, indexes), no triggers.
      await sql`CREATE TABLE bench_copy_target (LIKE session_events INCLUDING ALL)`.execute(scratch.db);
      // On Citus, distributed as session_events is, so that the COPY goes through the
      // coordinator into the same shards on the same workers.
      if (await storeIsDistributed(scratch.db)) {
        await sql`SELECT create_distributed_table('bench_copy_target', 'session_id', colocate_with => 'session_events')`.execute(scratch.db);
      }
      // The same rows as the API writes: every column as EventStore.append fills it.
      const layout = await probeEventLayout(scratch.db);
      const chunks = [...chunked(corpus.sessions.flatMap((session) => session.rows.map((row) => copyLine(row, layout))))];
      const client = new pg.Client({ connectionString: scratch.url, application_name: 'os-audit-bench-copy' });
      await client.connect();
      try {
        await checkpointClient(client);
        return await timed(() => copyInto(client, `bench_copy_target ${eventCopyColumns(layout)}`, chunks));
      } finally {
        await client.end();
      }
    }
    case 'api': {
      const db = openDatabase({ connectionString: scratch.url, maxConnections: method.writers, applicationName: 'os-audit-bench-api' });
      try {
        // Open the pool's connections before the clock starts.
        await Promise.all(Array.from({ length: method.writers }, () => sql`SELECT 1`.execute(db)));
        await checkpointDatabase(db);
        const store = new EventStore(db);
        const queues = Array.from({ length: method.writers }, (_, w) => corpus.sessions.filter((_, i) => i % method.writers === w));
        return await timed(() =>
          Promise.all(
            queues.map(async (sessions) => {
              for (const session of sessions) {
                for (let i = 0; i < session.rows.length; i += method.batch) {
                  await store.append(session.sessionId, session.rows.slice(i, i + method.batch).map((row) => row.event));
                }
              }
            }),
          ),
        );
      } finally {
        await db.destroy();
      }
    }
    case 'import': {
      const db = openDatabase({ connectionString: scratch.url, applicationName: 'os-audit-bench-import' });
      try {
        await checkpointDatabase(db);
        let failure: string | undefined;
        const timing = await timed(async () => {
          const report = await importLogs(new EventStore(db), method.directory);
          failure = report.failures[0]?.message;
        });
        if (failure !== undefined) throw new Error(`import failed: ${failure}`);
        return timing;
      } finally {
        await db.destroy();
      }
    }
    case 'import-cli': {
      await checkpointDatabase(scratch.db);
      return timedCli(method.cliEntry, ['import', method.path], scratch.url);
    }
  }
}

/** Each method's samples, and their median. */
export interface AppendFigures {
  corpus: { events: number; sessions: number; sessionLength: number };
  methods: {
    name: string;
    method: AppendMethod;
    samples: AppendSample[];
    /** The median of the samples; NaN when every run failed. */
    medianEventsPerSecond: number;
    /** With `keepGoing`, why runs failed (the error's first line), one entry per failed run. */
    failures?: string[];
  }[];
}

/**
 * All append measurements, `runs` rounds of every method (interleaved, so that each round sees
 * the machine in the same state), each sample on a fresh database. A failed run throws, unless
 * `keepGoing`: then it is recorded (on the cluster a method may fail, e.g. in a distributed
 * deadlock, and the report says so rather than losing every other figure).
 */
export async function measureAppends(
  newDatabase: NewDatabase,
  corpus: AppendCorpus,
  methods: readonly AppendMethod[],
  runs: number,
  log: (line: string) => void,
  options: { keepGoing?: boolean } = {},
): Promise<AppendFigures> {
  const samples = methods.map(() => [] as AppendSample[]);
  const failures = methods.map(() => [] as string[]);
  for (let run = 0; run < runs; run++) {
    for (const [index, method] of methods.entries()) {
      let sample: AppendSample;
      try {
        sample = await measureAppend(newDatabase, corpus, method);
      } catch (error) {
        if (!options.keepGoing) throw error;
        const reason = (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
        failures[index]!.push(reason);
        log(`  run ${run + 1}/${runs}: ${methodName(method)}: FAILED: ${reason}`);
        continue;
      }
      samples[index]!.push(sample);
      const cpu = sample.clientCpuSeconds === null ? '' : `, client CPU ${sample.clientCpuSeconds.toFixed(2)} s`;
      log(`  run ${run + 1}/${runs}: ${methodName(method)}: ${Math.round(sample.eventsPerSecond).toLocaleString('en-US')} events/s (${sample.seconds.toFixed(2)} s${cpu})`);
    }
  }
  return {
    corpus: { events: corpus.events, sessions: corpus.sessions.length, sessionLength: corpus.sessionLength },
    methods: methods.map((method, index) => ({
      name: methodName(method),
      method,
      samples: samples[index]!,
      medianEventsPerSecond: median(samples[index]!.map((sample) => sample.eventsPerSecond)),
      ...(failures[index]!.length > 0 ? { failures: failures[index]! } : {}),
    })),
  };
}
