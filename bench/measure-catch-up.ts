import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { type Kysely, sql } from 'kysely';
import { builtInProjections } from '../projections/index.js';
import { storeIsDistributed } from '../src/db/distributed-store.js';
import type { DB } from '../src/db/schema.js';
import { foldWholeLogSql } from '../src/projector/projection.js';
import { verifyProjection } from '../src/projector/verify-projection.js';
import { checkpointDatabase } from './checkpoint.js';
import {
  clearBatchTableSql,
  describePlans,
  explainDistributedLimit,
  explainEventBatchOf,
  onTheShards,
  type StatementPlan,
  wholeLogStatements,
} from './citus-limit.js';
import { median, secondsSince } from './stats.js';

/** The projections measured: the ones os-audit ships, which `os-audit project` runs side by side. */
const projections = builtInProjections;

/** Empties every projection: its tables, and its checkpoint back to the start of the log. */
export async function resetProjection(db: Kysely<DB>): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const tables = projections.flatMap((projection) => projection.tables);
    await sql`TRUNCATE ${sql.join(tables.map((table) => sql.table(table)))}, projection_errors`.execute(trx);
    await sql`UPDATE projection_checkpoints SET transaction_id = '0', position = 0, events_applied = 0`.execute(trx);
  });
  await checkpointDatabase(db);
}

/** One digest of every snapshot of every projection, as dashboards read them. */
export async function snapshotDigest(db: Kysely<DB>): Promise<{ sessions: number; md5: string }> {
  const digests = [];
  for (const projection of projections) {
    const { rows } = await sql<{ sessions: number; md5: string }>`
      SELECT count(*)::int AS sessions, md5(string_agg(snapshot::text, '' ORDER BY session_id)) AS md5
      FROM ${sql.table(projection.snapshotView)}`.execute(db);
    digests.push(rows[0]!);
  }
  return { sessions: digests[0]!.sessions, md5: digests.map((digest) => digest.md5).join('+') };
}

/** A process's peak resident set, sampled from /proc. */
export class RssSampler {
  peakBytes = 0;
  samples = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly pid: number,
    private readonly everyMs = 50,
  ) {}

  start(): void {
    const tick = async () => {
      await this.sample();
      if (this.timer !== undefined) this.timer = setTimeout(tick, this.everyMs);
    };
    this.timer = setTimeout(tick, 0);
  }

  /** VmHWM (the kernel's high-water mark) and VmRSS; a process gone is no error. */
  async sample(): Promise<void> {
    try {
      const status = await readFile(`/proc/${this.pid}/status`, 'utf8');
      for (const field of ['VmHWM', 'VmRSS']) {
        const match = status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'));
        if (match) this.peakBytes = Math.max(this.peakBytes, Number(match[1]) * 1024);
      }
      this.samples += 1;
    } catch {
      // exited
    }
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}

export interface ProjectorRun {
  seconds: number;
  eventsApplied: number;
  batches: number;
  eventsPerSecond: number;
  peakRssBytes: number;
  rssSamples: number;
}

/**
 * Runs `os-audit project --once` as its own process (the built CLI, `node dist/...`), timed
 * from spawn to exit, its peak RSS sampled every 50 ms.
 */
export async function runProjectorOnce(url: string, cliEntry: string, extraArgs: readonly string[] = []): Promise<ProjectorRun> {
  const started = performance.now();
  const child = spawn(process.execPath, [cliEntry, 'project', '--once', ...extraArgs], {
    env: { ...process.env, DATABASE_URL: url },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const sampler = new RssSampler(child.pid!);
  sampler.start();
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (exitCode) => resolve(exitCode));
  });
  const seconds = secondsSince(started);
  sampler.stop();
  if (code !== 0) throw new Error(`os-audit project --once exited with ${code}:\n${stdout}${stderr}`);
  // A summary per projection: each folded the whole log.
  const summaries = [...stdout.matchAll(/^(\w+): projected (\d+) events? in (\d+) batch(?:es)?/gm)];
  if (summaries.length !== projections.length) throw new Error(`os-audit project --once printed no summary per projection:\n${stdout}${stderr}`);
  const folded = new Set(summaries.map((summary) => Number(summary[2])));
  if (folded.size !== 1) throw new Error(`the projections folded different numbers of events:\n${stdout}`);
  const eventsApplied = [...folded][0]!;
  return {
    seconds,
    eventsApplied,
    batches: summaries.reduce((sum, summary) => sum + Number(summary[3]), 0),
    eventsPerSecond: eventsApplied / seconds,
    peakRssBytes: sampler.peakBytes,
    rssSamples: sampler.samples,
  };
}

/** The median of three runs of the CLI's `--help`: loading Node and the CLI's modules. */
export async function timeStartup(cliEntry: string): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    await new Promise<void>((resolve, reject) => {
      const child = spawn(process.execPath, [cliEntry, '--help'], { stdio: 'ignore' });
      child.once('error', reject);
      child.once('close', () => resolve());
    });
    times.push(secondsSince(started));
  }
  return median(times);
}

/**
 * The limit: each projection by set-based SQL straight from the log, one after the other in
 * one transaction (the projector may fold them side by side). On one server one statement
 * each (`foldWholeLogSql`); on Citus a read into the projection's batch table and its fold
 * statements, each run on the shards (see `citus-limit.ts`); the batch tables are emptied
 * after the clock stops.
 */
export async function runSetBasedLimit(db: Kysely<DB>): Promise<number> {
  const distributed = await storeIsDistributed(db);
  const started = performance.now();
  await db.transaction().execute(async (trx) => {
    for (const projection of projections) {
      if (!distributed) await foldWholeLogSql(projection).execute(trx);
      else for (const statement of wholeLogStatements(projection)) await statement.execute(trx);
    }
  });
  const seconds = secondsSince(started);
  if (distributed) for (const projection of projections) await clearBatchTableSql(projection).execute(db);
  return seconds;
}

export interface CatchUpFigures {
  events: number;
  /** Seconds `node dist/src/cli/main.js --help` takes: the part of each run that is Node's start-up. */
  startupSeconds: number;
  sessions: number;
  projector: ProjectorRun[];
  limitSeconds: number[];
  medianEventsPerSecond: number;
  medianLimitEventsPerSecond: number;
  medianPeakRssBytes: number;
  maxPeakRssBytes: number;
  /** On Citus, how each statement the limit times is run (EXPLAIN): on the shards. */
  limitPlans?: StatementPlan[];
  /** On Citus, how the fold statements over `eventBatchOf(projection, session_events)` would run (EXPLAIN): why the limit does not use them. */
  eventBatchOfPlans?: StatementPlan[];
  /** Every run of the projector and of the limit gave these snapshots. */
  digest: string;
  digestsEqual: boolean;
  verify: { checked: number; mismatches: number; pending: number; firstMismatch?: string };
}

/**
 * `runs` rounds of: the set-based limit on empty tables, then the projector from an empty
 * projection. Each result's digest is compared with the first; after the last projector run, a
 * sample of 200 snapshots is verified against the in-memory fold of their logs.
 */
export async function measureCatchUp(
  url: string,
  db: Kysely<DB>,
  events: number,
  runs: number,
  cliEntry: string,
  log: (line: string) => void,
): Promise<CatchUpFigures> {
  const startupSeconds = await timeStartup(cliEntry);
  log(`  process start-up (node dist/src/cli/main.js --help): ${startupSeconds.toFixed(2)} s, included in each projector run`);
  const distributed = await storeIsDistributed(db);
  const limitPlans = distributed ? await explainDistributedLimit(db, projections) : undefined;
  const eventBatchOfPlans = distributed ? await explainEventBatchOf(db, projections) : undefined;
  if (limitPlans && eventBatchOfPlans) {
    log(`  the limit's statements on Citus (EXPLAIN): ${describePlans(limitPlans)}`);
    const through = eventBatchOfPlans.filter((plan) => !onTheShards(plan)).length;
    log(`  not used: the fold statements over eventBatchOf(session_events), ${through} of ${eventBatchOfPlans.length} through the coordinator: ${describePlans(eventBatchOfPlans)}`);
  }
  const projector: ProjectorRun[] = [];
  const limitSeconds: number[] = [];
  const digests: string[] = [];
  let sessions = 0;
  for (let run = 0; run < runs; run++) {
    await resetProjection(db);
    const seconds = await runSetBasedLimit(db);
    limitSeconds.push(seconds);
    const limitDigest = await snapshotDigest(db);
    digests.push(limitDigest.md5);
    log(`  run ${run + 1}/${runs}: set-based limit: ${rate(events / seconds)} events/s (${seconds.toFixed(2)} s), ${limitDigest.sessions} sessions`);

    await resetProjection(db);
    const result = await runProjectorOnce(url, cliEntry);
    if (result.eventsApplied !== events) throw new Error(`the projector folded ${result.eventsApplied} events, not ${events}`);
    projector.push(result);
    const digest = await snapshotDigest(db);
    digests.push(digest.md5);
    sessions = digest.sessions;
    log(
      `  run ${run + 1}/${runs}: os-audit project --once: ${rate(result.eventsPerSecond)} events/s ` +
        `(${result.seconds.toFixed(2)} s, ${result.batches} batches, peak RSS ${mb(result.peakRssBytes)} MB)`,
    );
  }
  const verify: CatchUpFigures['verify'] = { checked: 0, mismatches: 0, pending: 0 };
  for (const projection of projections) {
    const report = await verifyProjection(db, projection, { sample: 200 });
    const first = report.mismatches[0];
    verify.checked += report.checked;
    verify.mismatches += report.mismatches.length;
    verify.pending += report.pending.length;
    if (first && verify.firstMismatch === undefined) verify.firstMismatch = `${projection.name}: ${first.sessionId}: ${first.differences.join('; ')}`;
  }
  log(`  verify --sample 200 of each projection after the last projector run: ${verify.checked} checked, ${verify.mismatches} mismatches`);
  return {
    events,
    startupSeconds,
    sessions,
    projector,
    limitSeconds,
    medianEventsPerSecond: median(projector.map((r) => r.eventsPerSecond)),
    medianLimitEventsPerSecond: median(limitSeconds.map((s) => events / s)),
    medianPeakRssBytes: median(projector.map((r) => r.peakRssBytes)),
    maxPeakRssBytes: Math.max(...projector.map((r) => r.peakRssBytes)),
    ...(limitPlans ? { limitPlans } : {}),
    ...(eventBatchOfPlans ? { eventBatchOfPlans } : {}),
    digest: digests[0]!,
    digestsEqual: digests.every((d) => d === digests[0]),
    verify,
  };
}

export function rate(eventsPerSecond: number): string {
  return Math.round(eventsPerSecond).toLocaleString('en-US');
}

export function mb(bytes: number): string {
  return (bytes / 1024 ** 2).toFixed(1);
}
