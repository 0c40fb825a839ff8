import { type ChildProcess, spawn } from 'node:child_process';
import { sql } from 'kysely';
import pg from 'pg';
import { openDatabase } from '../src/db/open-database.js';
import type { JsonObject } from '../src/json/json-value.js';
import { EventStore } from '../src/store/event-store.js';
import { withClient } from '../test/support/scratch-database.js';
import { type SessionScript, SessionFactory } from './corpus.js';
import { RssSampler } from './measure-catch-up.js';
import { median, percentile, sleep } from './stats.js';

export interface LiveOptions {
  writers: number;
  /** Events per second, all writers together. */
  eventsPerSecond: number;
  /** Events per append. */
  batch: number;
  /** Sessions each writer keeps open at once (each of ~200 events, then a new one). */
  sessionsPerWriter: number;
  warmupSeconds: number;
  windowSeconds: number;
  /** Windows measured one after the other; each gives p50/p99/max, the figures are their medians. */
  windows: number;
  /** The prefix of the writers' session ids (new sessions for each measurement); default `lv`. */
  sessionPrefix?: string;
}

export interface LiveWindow {
  appends: number;
  events: number;
  eventsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface LiveFigures {
  options: LiveOptions;
  windows: LiveWindow[];
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  achievedEventsPerSecond: number;
  /** Appends whose effect was not seen within 30 s of the end (should be 0). */
  unseen: number;
  /** The append round trip itself (validation, the statement, the commit), for context. */
  appendP50Ms: number;
  appendP99Ms: number;
  /** The poller's round trip, the resolution of the figures. */
  pollP50Ms: number;
  daemonPeakRssBytes: number;
}

interface PendingAppend {
  lastSeq: number;
  committedAt: number;
  window: number;
}

/**
 * The live figure: the daemon (`os-audit project --poll-interval 1000`, woken by NOTIFY) runs
 * against the database while `writers` writers append `eventsPerSecond` events per second in
 * all, in batches of `batch`, each to its own sessions, on a fixed schedule. For each append,
 * the time from the moment its promise resolved (its commit) until a poller that reads
 * `os_snapshots.last_seq` of the sessions awaiting an effect in a loop (about 1 ms apart) sees
 * it folded.
 */
export async function measureLive(
  url: string,
  cliEntry: string,
  seed: string,
  options: LiveOptions,
  log: (line: string) => void,
): Promise<LiveFigures> {
  await settleDatabase(url);
  const daemon = startDaemon(url, cliEntry);
  const rss = new RssSampler(daemon.child.pid!, 100);
  rss.start();
  const db = openDatabase({ connectionString: url, maxConnections: options.writers, applicationName: 'os-audit-bench-live' });
  const poller = new pg.Client({ connectionString: url, application_name: 'os-audit-bench-poller' });
  try {
    await daemon.leader;
    await poller.connect();
    await Promise.all(Array.from({ length: options.writers }, () => sql`SELECT 1`.execute(db)));
    const store = new EventStore(db);

    const perWriterRate = options.eventsPerSecond / options.writers;
    const intervalMs = (1000 * options.batch) / perWriterRate;
    const totalSeconds = options.warmupSeconds + options.windows * options.windowSeconds;
    const appendsPerWriter = Math.ceil((totalSeconds * 1000) / intervalMs) + 50;
    const factory = new SessionFactory({ seed, prefix: options.sessionPrefix ?? 'lv' });
    // Every batch made before the clock starts: generating events is not the writers' cost.
    const plans = Array.from({ length: options.writers }, () => planWriter(factory, options, appendsPerWriter));

    const pending = new Map<string, PendingAppend[]>();
    const latencies: number[][] = Array.from({ length: options.windows }, () => []);
    const appendTimes: number[] = [];
    const windowEvents = new Array<number>(options.windows).fill(0);
    const windowAppends = new Array<number>(options.windows).fill(0);
    const pollTimes: number[] = [];
    let writing = true;
    let writersDoneAt = Number.POSITIVE_INFINITY;

    const start = performance.now() + 200;
    const end = start + totalSeconds * 1000;
    /** The window an append committed in; -1 in the warm-up (and after the end). */
    const windowOf = (at: number) => {
      const t = (at - start) / 1000 - options.warmupSeconds;
      const window = Math.floor(t / options.windowSeconds);
      return t < 0 || window >= options.windows ? -1 : window;
    };

    const writers = plans.map(async (plan, w) => {
      const offset = (intervalMs / options.writers) * w;
      let sentEvents = 0;
      for (let k = 0; k < plan.length; k++) {
        // On schedule by events (a session's last batch may be short), whatever the lateness of timers.
        const due = start + offset + (1000 * sentEvents) / perWriterRate;
        if (due >= end) break;
        sentEvents += plan[k]!.events.length;
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
        const { sessionId, events } = plan[k]!;
        const sent = performance.now();
        const seqs = await store.append(sessionId, events);
        const committedAt = performance.now();
        const window = windowOf(committedAt);
        appendTimes.push(committedAt - sent);
        if (window >= 0) {
          windowEvents[window]! += events.length;
          windowAppends[window]! += 1;
        }
        let list = pending.get(sessionId);
        if (list === undefined) pending.set(sessionId, (list = []));
        list.push({ lastSeq: seqs[seqs.length - 1]!, committedAt, window });
      }
    });

    const polling = (async () => {
      for (;;) {
        if (pending.size === 0) {
          if (!writing) return;
          await sleep(1);
          continue;
        }
        const sent = performance.now();
        const { rows } = await poller.query<{ session_id: string; last_seq: string }>(
          'SELECT session_id, last_seq FROM os_snapshots WHERE session_id = ANY($1)',
          [[...pending.keys()]],
        );
        const seenAt = performance.now();
        pollTimes.push(seenAt - sent);
        for (const row of rows) {
          const list = pending.get(row.session_id);
          if (list === undefined) continue;
          const folded = Number(row.last_seq);
          while (list.length > 0 && list[0]!.lastSeq <= folded) {
            const done = list.shift()!;
            if (done.window >= 0) latencies[done.window]!.push(seenAt - done.committedAt);
          }
          if (list.length === 0) pending.delete(row.session_id);
        }
        if (!writing && seenAt - writersDoneAt > 30_000) return;
        await sleep(1);
      }
    })();

    await Promise.all(writers);
    writersDoneAt = performance.now();
    writing = false;
    await polling;
    const unseen = [...pending.values()].reduce((n, list) => n + list.length, 0);

    const windows = latencies.map((values, i) => ({
      appends: windowAppends[i]!,
      events: windowEvents[i]!,
      eventsPerSecond: windowEvents[i]! / options.windowSeconds,
      p50Ms: percentile(values, 50),
      p99Ms: percentile(values, 99),
      maxMs: Math.max(...values),
    }));
    for (const [i, window] of windows.entries()) {
      log(
        `  window ${i + 1}/${options.windows}: ${Math.round(window.eventsPerSecond)} events/s in ${window.appends} appends; ` +
          `commit → visible p50 ${window.p50Ms.toFixed(1)} ms, p99 ${window.p99Ms.toFixed(1)} ms, max ${window.maxMs.toFixed(1)} ms`,
      );
    }
    return {
      options,
      windows,
      p50Ms: median(windows.map((w) => w.p50Ms)),
      p99Ms: median(windows.map((w) => w.p99Ms)),
      maxMs: median(windows.map((w) => w.maxMs)),
      achievedEventsPerSecond: median(windows.map((w) => w.eventsPerSecond)),
      unseen,
      appendP50Ms: percentile(appendTimes, 50),
      appendP99Ms: percentile(appendTimes, 99),
      pollP50Ms: percentile(pollTimes, 50),
      daemonPeakRssBytes: rss.peakBytes,
    };
  } finally {
    rss.stop();
    await poller.end().catch(() => {});
    await db.destroy();
    await daemon.stop();
  }
}

/**
 * Starts from a settled database, as a daemon's steady state is. What came before (a catch-up
 * that emptied and refilled the snapshot tables) is vacuumed and analyzed now, not by autovacuum
 * during the windows. A CHECKPOINT flushes it now rather than on their time.
 */
async function settleDatabase(url: string): Promise<void> {
  await withClient(url, async (client) => {
    await client.query('VACUUM ANALYZE');
    await client.query('CHECKPOINT');
  });
}

/** A writer's appends: batches of its open sessions in turn, a new session when one ends. */
function planWriter(factory: SessionFactory, options: LiveOptions, appends: number): { sessionId: string; events: JsonObject[] }[] {
  const open: SessionScript[] = Array.from({ length: options.sessionsPerWriter }, () => factory.session(factory.nextLength()));
  const plan: { sessionId: string; events: JsonObject[] }[] = [];
  for (let k = 0; k < appends; k++) {
    const slot = k % open.length;
    let script = open[slot]!;
    if (script.done) open[slot] = script = factory.session(factory.nextLength());
    const events: JsonObject[] = [];
    while (events.length < options.batch && !script.done) events.push(script.next().event);
    plan.push({ sessionId: script.sessionId, events });
  }
  return plan;
}

interface Daemon {
  child: ChildProcess;
  /** Resolves once it holds the lease. */
  leader: Promise<void>;
  stop(): Promise<void>;
}

function startDaemon(url: string, cliEntry: string): Daemon {
  const child = spawn(process.execPath, [cliEntry, 'project', '--poll-interval', '1000'], {
    env: { ...process.env, DATABASE_URL: url },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const leader = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the daemon did not take the lease within 30 s:\n${stderr}`)), 30_000);
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      if (/leader: .* holds the lease/.test(stderr)) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`the daemon exited:\n${stderr}`));
    });
  });
  leader.catch(() => {});
  child.stdout!.resume();
  return {
    child,
    leader,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timeout = sleep(15_000).then(() => 'timeout' as const);
      if ((await Promise.race([exited.then(() => 'exited' as const), timeout])) === 'timeout') {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}

/** One step of {@link measureLiveCeiling}: a rate asked for, and what it gave. */
export interface LiveCeilingStep {
  askedEventsPerSecond: number;
  achievedEventsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** The writers kept the rate (95% of it), every append was seen, and p99 stayed within the bound. */
  held: boolean;
}

export interface LiveCeiling {
  /** The p99 bound a rate must keep, commit → visible. */
  p99BoundMs: number;
  steps: LiveCeilingStep[];
  /** The highest asked rate that held; null when the first did not. */
  highestEventsPerSecond: number | null;
}

/**
 * The highest steady rate the daemon keeps within `p99BoundMs` (commit → visible): {@link measureLive}
 * at each of `rates` in turn (`base` gives the rest: writers, batch, windows), until one does not
 * hold. The writers' batches must be large enough for them to reach the rates: at batches of 10,
 * 8 writers in one Node process top out below 10,000 events/s on 2 cores.
 */
export async function measureLiveCeiling(
  url: string,
  cliEntry: string,
  seed: string,
  base: Omit<LiveOptions, 'eventsPerSecond'>,
  rates: readonly number[],
  p99BoundMs: number,
  log: (line: string) => void,
): Promise<LiveCeiling> {
  const steps: LiveCeilingStep[] = [];
  for (const [i, rate] of rates.entries()) {
    log(`  ${rate.toLocaleString('en-US')} events/s asked:`);
    const figures = await measureLive(url, cliEntry, `${seed}/${rate}`, { ...base, eventsPerSecond: rate, sessionPrefix: `lc${i}` }, log);
    const held = figures.achievedEventsPerSecond >= 0.95 * rate && figures.unseen === 0 && figures.p99Ms <= p99BoundMs;
    steps.push({ askedEventsPerSecond: rate, achievedEventsPerSecond: figures.achievedEventsPerSecond, p50Ms: figures.p50Ms, p99Ms: figures.p99Ms, held });
    if (!held) break;
  }
  const held = steps.filter((step) => step.held);
  return { p99BoundMs, steps, highestEventsPerSecond: held.length === 0 ? null : held[held.length - 1]!.askedEventsPerSecond };
}
