import { type ChildProcess, spawn } from 'node:child_process';
import { type Kysely, sql } from 'kysely';
import { storeIsDistributed } from '../../src/db/distributed-store.js';
import type { DB } from '../../src/db/schema.js';
import { cliEntry, namedUrl, repoRoot } from './cli-process.js';

/** How a process ended. */
export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A line the process wrote to stderr, with the time (`performance.now()`) it reached us. */
export interface Line {
  at: number;
  text: string;
}

/** A JSON log line of the daemon (see src/observability/projector-log.ts), with the time it reached us. */
export interface LogRecord {
  at: number;
  level: string;
  /** What happened: `started`, `listening`, `leader`, `standby`, `projected`, `sessions_stopped`, `retry`, `stopped`, ... */
  event?: string;
  owner?: string;
  msg: string;
  [field: string]: unknown;
}

/** An `os-audit project` daemon running as a real child process. */
export interface DaemonProcess {
  readonly owner: string;
  readonly child: ChildProcess;
  /** Its connections' `application_name` in `pg_stat_activity`. */
  readonly applicationName: string;
  /** stderr so far, line by line. */
  readonly lines: readonly Line[];
  /** The stderr lines that are JSON log records, parsed. */
  readonly logs: readonly LogRecord[];
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** Resolves when the process has exited (never rejects). */
  readonly exited: Promise<Exit>;
  /** The first stderr line (past or future) matching `pattern`; rejects on timeout or exit. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<Line & { match: RegExpMatchArray }>;
  /** The first log record (past or future) of `event`; rejects on timeout or exit. */
  waitForLog(event: string, timeoutMs?: number): Promise<LogRecord>;
  /** The URL of its metrics and health server, from its `listening` log record. */
  metricsUrl(timeoutMs?: number): Promise<string>;
  /** Sends `signal` and waits for the exit. */
  stop(signal: NodeJS.Signals, timeoutMs?: number): Promise<Exit>;
  isRunning(): boolean;
}

export interface DaemonOptions {
  owner: string;
  /** Extra arguments after `project` and the defaults (later ones win with commander). */
  args?: readonly string[];
  /** Environment variables on top of this process's and `DATABASE_URL`. */
  env?: NodeJS.ProcessEnv;
}

/** `leader: OWNER holds the lease (epoch N)`, as the daemon logs it. */
export function leaderLine(owner: string): RegExp {
  return new RegExp(`leader: ${escapeRegExp(owner)} holds the lease \\(epoch (\\d+)\\)`);
}

/**
 * Spawns `os-audit project --poll-interval 50 --lease-ttl 2000 --metrics-port 0 --owner OWNER
 * ...args` with tsx (its metrics server on a free port, so that daemons side by side do not
 * collide). Its connections are named `owner` (through the URL's `application_name`), so that
 * `pg_stat_activity` tells them apart.
 */
export function startDaemon(databaseUrl: string, options: DaemonOptions): DaemonProcess {
  const args = ['--import', 'tsx', cliEntry, 'project', '--poll-interval', '50', '--lease-ttl', '2000', '--metrics-port', '0', '--owner', options.owner, ...(options.args ?? [])];
  const child = spawn(process.execPath, args, {
    cwd: repoRoot,
    env: { ...process.env, ...options.env, DATABASE_URL: namedUrl(databaseUrl, options.owner) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });

  const lines: Line[] = [];
  const logs: LogRecord[] = [];
  const waiters = new Set<() => void>();
  const notify = () => {
    for (const waiter of [...waiters]) waiter();
  };
  let partial = '';
  let stderrText = '';
  let stdoutText = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdoutText += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderrText += chunk;
    const at = performance.now();
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    for (const text of parts) {
      lines.push({ at, text });
      const record = parseLogRecord(text, at);
      if (record) logs.push(record);
    }
    notify();
  });

  let exit: Exit | undefined;
  const exited = new Promise<Exit>((resolve) => {
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      resolve(exit);
    });
    child.once('error', () => {
      exit = { code: null, signal: null };
      resolve(exit);
    });
  });
  // Lines still in the pipe when the process exits come with 'close'.
  child.once('close', notify);
  void exited.then(notify);

  const describe = () => `daemon ${options.owner} (exit ${JSON.stringify(exit ?? null)}); stderr:\n${stderrText}`;

  /** The first thing `find` finds in stderr, now or when more comes; rejects on timeout or exit. */
  const waitFor = <T>(what: string, timeoutMs: number, find: () => T | undefined): Promise<T> =>
    new Promise((resolve, reject) => {
      const check = () => {
        const found = find();
        if (found !== undefined) return finish(() => resolve(found));
        if (exit !== undefined && child.stderr!.readableEnded) {
          finish(() => reject(new Error(`no ${what} before the exit of ${describe()}`)));
        }
      };
      const timer = setTimeout(() => finish(() => reject(new Error(`no ${what} within ${timeoutMs} ms: ${describe()}`))), timeoutMs);
      const finish = (settle: () => void) => {
        clearTimeout(timer);
        waiters.delete(check);
        settle();
      };
      waiters.add(check);
      check();
    });

  const daemon: DaemonProcess = {
    owner: options.owner,
    child,
    applicationName: options.owner,
    lines,
    logs,
    stdout: () => stdoutText,
    stderr: () => stderrText,
    exited,
    isRunning: () => exit === undefined,
    waitForLine(pattern, timeoutMs = 30_000) {
      return waitFor(`a stderr line matching ${pattern}`, timeoutMs, () => {
        for (const line of lines) {
          const match = line.text.match(pattern);
          if (match) return { ...line, match };
        }
        return undefined;
      });
    },
    waitForLog(event, timeoutMs = 30_000) {
      return waitFor(`a log record of event ${JSON.stringify(event)}`, timeoutMs, () => logs.find((record) => record.event === event));
    },
    async metricsUrl(timeoutMs = 30_000) {
      return String((await daemon.waitForLog('listening', timeoutMs)).url);
    },
    async stop(signal, timeoutMs = 15_000) {
      if (exit === undefined) child.kill(signal);
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`still running ${timeoutMs} ms after ${signal}: ${describe()}`)), timeoutMs);
      });
      try {
        return await Promise.race([exited, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
  return daemon;
}

/**
 * Polls `check` until it returns something other than `undefined` or `false`, and returns that;
 * throws after `timeoutMs` naming `what`, with `explain()` when given. `check` may throw to
 * give up early.
 */
export async function pollUntil<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  options: { timeoutMs?: number; intervalMs?: number; explain?: () => string | Promise<string> } = {},
): Promise<T> {
  const deadline = performance.now() + (options.timeoutMs ?? 30_000);
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (performance.now() > deadline) {
      const detail = options.explain ? `: ${await options.explain()}` : '';
      throw new Error(`timed out after ${options.timeoutMs ?? 30_000} ms waiting for ${what}${detail}`);
    }
    await sleep(options.intervalMs ?? 25);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The checkpoint row of the OS snapshot projection. */
export async function readCheckpointRow(db: Kysely<DB>) {
  const { rows } = await sql<{ transaction_id: string; position: number; epoch: number; events_applied: number }>`
    SELECT transaction_id::text AS transaction_id, position, epoch, events_applied
    FROM projection_checkpoints WHERE projection = 'os_snapshot'`.execute(db);
  return rows[0]!;
}

/** The lease row of the OS snapshot projection, with whether it has expired (been released). */
export async function readLeaseRow(db: Kysely<DB>) {
  const { rows } = await sql<{ owner: string; epoch: number; acquired_at: Date; expires_at: Date; expired: boolean }>`
    SELECT owner, epoch, acquired_at, expires_at, expires_at <= now() AS expired
    FROM projection_leases WHERE projection = 'os_snapshot'`.execute(db);
  return rows[0];
}

/** Connections of the database named `applicationName` (a daemon's, see {@link startDaemon}). */
export async function backendsOf(db: Kysely<DB>, applicationName: string) {
  const { rows } = await sql<{ pid: number; state: string | null; wait_event_type: string | null; backend_xid: string | null; query: string | null }>`
    SELECT pid, state, wait_event_type, backend_xid::text AS backend_xid, query
    FROM pg_stat_activity WHERE datname = current_database() AND application_name = ${applicationName}`.execute(db);
  return rows;
}

/**
 * The status of a transaction whose 32-bit id `pg_stat_activity.backend_xid` showed:
 * 'committed', 'aborted' or 'in progress' (its epoch taken from the current snapshot).
 */
export async function transactionStatus(db: Kysely<DB>, xid: string): Promise<string | null> {
  const { rows } = await sql<{ xmax: string }>`SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS xmax`.execute(db);
  const xmax = BigInt(rows[0]!.xmax);
  const low = BigInt(xid);
  let full = ((xmax >> 32n) << 32n) | low;
  if (low > (xmax & 0xffffffffn)) full -= 1n << 32n;
  const status = await sql<{ status: string | null }>`SELECT pg_xact_status(${full.toString()}::xid8) AS status`.execute(db);
  return status.rows[0]!.status;
}

/**
 * What the snapshot tables say they folded next to what the log says those events are: the
 * events of each session up to its `os_snapshots.last_seq`. Equal objects mean that no event
 * was folded twice or skipped, whatever the progress of the projection.
 */
export async function foldedTotals(db: Kysely<DB>) {
  const { rows } = await sql<Record<string, number>>`
    WITH folded AS (
      SELECT e.session_id, e.seq, e.kind, e.payload
      FROM session_events e JOIN os_snapshots s ON s.session_id = e.session_id AND e.seq <= s.last_seq)
    SELECT
      (SELECT coalesce(sum(last_seq + 1), 0) FROM os_snapshots)::bigint AS snap_events,
      (SELECT coalesce(sum(page_out_count), 0) FROM os_snapshots)::bigint AS snap_page_out,
      (SELECT coalesce(sum(page_in_count), 0) FROM os_snapshots)::bigint AS snap_page_in,
      (SELECT coalesce(sum(tool_gated_count), 0) FROM os_snapshots)::bigint AS snap_tool_gated,
      (SELECT count(*) FROM os_signals)::bigint AS snap_signals,
      (SELECT count(*) FROM os_budget_exceeded)::bigint AS snap_budgets,
      (SELECT count(*) FROM os_processes)::bigint AS snap_processes,
      (SELECT count(*) FROM folded)::bigint AS log_events,
      (SELECT count(*) FROM folded WHERE kind = 'page_out')::bigint AS log_page_out,
      (SELECT count(*) FROM folded WHERE kind = 'page_in')::bigint AS log_page_in,
      (SELECT count(*) FROM folded WHERE kind = 'tool_gated')::bigint AS log_tool_gated,
      (SELECT count(*) FROM folded WHERE kind = 'signal_disposed')::bigint AS log_signals,
      (SELECT count(*) FROM folded WHERE kind = 'budget_exceeded')::bigint AS log_budgets,
      (SELECT count(DISTINCT (session_id, payload ->> 'agent_id')) FROM folded WHERE kind = 'agent_process_changed')::bigint AS log_processes`.execute(db);
  const row = rows[0]!;
  const names = ['events', 'page_out', 'page_in', 'tool_gated', 'signals', 'budgets', 'processes'];
  return {
    snapshots: Object.fromEntries(names.map((name) => [name, Number(row[`snap_${name}`])])),
    log: Object.fromEntries(names.map((name) => [name, Number(row[`log_${name}`])])),
  };
}

/**
 * Where the snapshot tables and the checkpoint disagree (half a batch kept, or a session
 * folded past the checkpoint); empty when they agree.
 *
 * On one server: sessions whose `os_snapshots.last_seq` is not the highest seq among their
 * events at or before the checkpoint (in (transaction id, position) order), which is where a
 * batch that moved the checkpoint leaves it.
 *
 * On Citus the checkpoint has no position (a batch reads by seq, see docs/scale-out.md): its
 * heads are `os_snapshots.last_seq`. Rows then are sessions whose head is past their stored
 * log (`expected` the log's last seq, `actual` the head). A row named `(events_applied)` is a
 * checkpoint whose `events_applied` (`actual`) is not what the heads account for (`expected`:
 * the events up to every head, less those set aside in `projection_errors`).
 */
export async function lastSeqsOffTheCheckpoint(db: Kysely<DB>) {
  if (await storeIsDistributed(db)) {
    const { rows } = await sql<{ session_id: string; expected: number | null; actual: number | null }>`
      WITH logs AS (SELECT session_id, max(seq) AS last_seq FROM session_events GROUP BY session_id),
      heads_past AS (
        SELECT s.session_id, l.last_seq AS expected, s.last_seq AS actual
        FROM os_snapshots s LEFT JOIN logs l ON l.session_id = s.session_id
        WHERE l.last_seq IS NULL OR s.last_seq > l.last_seq),
      counted AS (
        SELECT '(events_applied)'::text AS session_id,
          (SELECT coalesce(sum(last_seq + 1), 0) FROM os_snapshots)
            - (SELECT count(*) FROM projection_errors WHERE projection = 'os_snapshot') AS expected,
          (SELECT events_applied FROM projection_checkpoints WHERE projection = 'os_snapshot') AS actual)
      SELECT session_id, expected::bigint, actual::bigint FROM (
        (SELECT * FROM heads_past ORDER BY session_id LIMIT 20)
        UNION ALL
        SELECT * FROM counted WHERE expected IS DISTINCT FROM actual) AS off
      ORDER BY 1`.execute(db);
    return rows.map((row) => ({ ...row, expected: row.expected === null ? null : Number(row.expected), actual: row.actual === null ? null : Number(row.actual) }));
  }
  const { rows } = await sql<{ session_id: string; expected: number | null; actual: number | null }>`
    WITH c AS (SELECT transaction_id, position FROM projection_checkpoints WHERE projection = 'os_snapshot'),
    reached AS (
      SELECT e.session_id, max(e.seq) AS last_seq
      FROM session_events e, c
      WHERE (e.transaction_id, e.position) <= (c.transaction_id, c.position)
      GROUP BY e.session_id)
    SELECT coalesce(r.session_id, s.session_id) AS session_id, r.last_seq AS expected, s.last_seq AS actual
    FROM reached r FULL JOIN os_snapshots s ON s.session_id = r.session_id
    WHERE r.last_seq IS DISTINCT FROM s.last_seq
    ORDER BY 1 LIMIT 20`.execute(db);
  return rows;
}

/** Sessions whose `os_snapshots.last_seq` is not their `sessions.last_seq` (after a full catch-up). */
export async function sessionsNotCaughtUp(db: Kysely<DB>) {
  const { rows } = await sql<{ session_id: string; log: number | null; snapshot: number | null }>`
    SELECT coalesce(h.session_id, s.session_id) AS session_id, h.last_seq AS log, s.last_seq AS snapshot
    FROM sessions h FULL JOIN os_snapshots s ON s.session_id = h.session_id
    WHERE h.last_seq IS DISTINCT FROM s.last_seq
    ORDER BY 1 LIMIT 20`.execute(db);
  return rows;
}

/** Events stored in the log. */
export async function countEvents(db: Kysely<DB>): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::bigint AS n FROM session_events`.execute(db);
  return Number(rows[0]!.n);
}

/** A JSON log record (an object with a level and a message), or undefined for any other line. */
function parseLogRecord(text: string, at: number): LogRecord | undefined {
  try {
    const value: unknown = JSON.parse(text);
    const record = value as LogRecord;
    return typeof value === 'object' && value !== null && typeof record.level === 'string' && typeof record.msg === 'string' ? { ...record, at } : undefined;
  } catch {
    return undefined;
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
