/**
 * The soak: `npm run soak -- --minutes N [options]`. Writers append at a steady rate while the
 * daemon is SIGKILLed and restarted and the server's connections are killed at random (and,
 * with --server-restarts, the server restarted). At the end it prints what was appended and
 * projected, the projection lag and the faults survived. It also prints anything lost or stored
 * twice, and the result of `os-audit verify --all`. Exit code 1 on any loss, double, hole or verify failure.
 *
 * With DATABASE_URL it runs in a new database on that server (CREATE DATABASE rights needed),
 * dropped at the end unless --keep; without it, on a private server in a temporary folder.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { Prng } from '../bench/prng.js';
import { percentile, sleep } from '../bench/stats.js';
import { poolOf } from '../src/db/open-database.js';
import { readProjectionStatus } from '../src/projector/projection-status.js';
import { readJournals } from '../test/support/append-journal.js';
import { startConnectionKiller } from '../test/support/connection-killer.js';
import { type DaemonProcess, startDaemon } from '../test/support/daemon-process.js';
import { type RestartablePostgres, startRestartablePostgres } from '../test/support/restartable-postgres.js';
import { createScratchDatabase } from '../test/support/scratch-database.js';
import { auditStore, storeProblems, verifyWithCli } from '../test/support/store-audit.js';
import { startWriter, type WriterProcess } from '../test/support/writer-process.js';

const { values: options } = parseArgs({
  options: {
    minutes: { type: 'string', default: '1' },
    writers: { type: 'string', default: '4' },
    rate: { type: 'string', default: '20' },
    'no-daemon-kills': { type: 'boolean', default: false },
    'no-connection-kills': { type: 'boolean', default: false },
    'server-restarts': { type: 'boolean', default: false },
    seed: { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});
const minutes = Number(options.minutes);
const seed = Number(options.seed ?? Date.now());
const random = new Prng(seed);
const log = (message: string) => process.stderr.write(`[soak ${new Date().toISOString().slice(11, 19)}] ${message}\n`);

const serverUrl = process.env.DATABASE_URL;
if (options['server-restarts'] && serverUrl) throw new Error('--server-restarts needs the private server: unset DATABASE_URL');
const server: RestartablePostgres | undefined = serverUrl ? undefined : await startRestartablePostgres();
const database = await createScratchDatabase(serverUrl ?? server!.adminUrl);
const { db, url } = database;
poolOf(db)?.on('error', () => {}); // the soak's own idle connections die with the others: it reconnects
const journals = mkdtempSync(path.join(tmpdir(), 'os-audit-soak-'));
log(`seed ${seed}; database ${database.name} on ${serverUrl ? 'DATABASE_URL' : 'a private server'}; ${minutes} min`);

const counts = { daemonKills: 0, daemonCrashes: 0, writerCrashes: 0, serverRestarts: 0 };
const crashReasons = new Map<string, number>();
let stopping = false;

// Writers: each on all sessions; one of them through PostgresSessionLog. A writer that dies is restarted under a new name.
const sessions = Array.from({ length: 40 }, (_, i) => `soak-${i}`);
const writers: WriterProcess[] = [];
function superviseWriter(slot: number, generation = 1): void {
  const writer = startWriter({
    name: `soak-writer-${slot}g${generation}`,
    url,
    journal: path.join(journals, `writer-${slot}g${generation}.jsonl`),
    api: slot === 0 ? 'session-log' : 'event-store',
    sessions,
    appendsPerSecond: Number(options.rate),
    batch: [1, 20],
  });
  writers.push(writer);
  void writer.exited.then(async () => {
    if (stopping) return;
    counts.writerCrashes += 1;
    noteCrash(`writer: ${lastLine(writer.stderr())}`);
    await sleep(200);
    if (!stopping) superviseWriter(slot, generation + 1);
  });
}

// The daemon: killed on purpose at random, restarted whenever it is gone.
let daemon: DaemonProcess | undefined;
let daemonStarts = 0;
const killedOnPurpose = new WeakSet<DaemonProcess>();
function superviseDaemon(): void {
  const current = startDaemon(url, { owner: `soak-daemon-${daemonStarts++}`, args: ['--lease-ttl', '1000'] });
  daemon = current;
  void current.exited.then(async () => {
    if (stopping) return;
    if (!killedOnPurpose.has(current)) {
      counts.daemonCrashes += 1;
      noteCrash(`daemon: ${lastLine(current.stderr())}`);
    }
    await sleep(200);
    if (!stopping) superviseDaemon();
  });
}

function noteCrash(reason: string): void {
  const key = reason.slice(0, 160);
  crashReasons.set(key, (crashReasons.get(key) ?? 0) + 1);
}

function lastLine(text: string): string {
  const lines = text.trim().split('\n').filter((line) => !/^\s+at /.test(line));
  const error = lines.find((line) => /^\w*[Ee]rror: /.test(line)) ?? lines.at(-1) ?? '(no output)';
  return text.includes("Unhandled 'error' event") ? `unhandled 'error' event: ${error}` : error;
}

/** Runs `act` at random intervals in [fromMs, toMs] until the soak stops. */
async function every(fromMs: number, toMs: number, act: () => Promise<void>): Promise<void> {
  while (!stopping) {
    await sleep(random.int(fromMs, toMs));
    if (!stopping) await act().catch((error: unknown) => log(`fault injection failed: ${String(error)}`));
  }
}

// Lag: the time from an event's recorded_at to the moment a poll of os_snapshots first sees it folded.
const lagsMs: number[] = [];
let lagErrors = 0;
async function sampleLag(): Promise<void> {
  const seen = new Map<string, number>();
  while (!stopping) {
    await sleep(100);
    try {
      const rows = await db.selectFrom('os_snapshots').select(['session_id', 'last_seq']).execute();
      const moved = rows.filter((row) => row.last_seq > (seen.get(row.session_id) ?? -1));
      if (moved.length === 0) continue;
      const { rows: lags } = await sql<{ lag_ms: number }>`
        SELECT extract(epoch FROM clock_timestamp() - e.recorded_at) * 1000 AS lag_ms
        FROM session_events e
        JOIN unnest(${moved.map((row) => row.session_id)}::text[], ${moved.map((row) => seen.get(row.session_id) ?? -1)}::bigint[], ${moved.map((row) => row.last_seq)}::bigint[]) AS m(session_id, after, upto)
          ON e.session_id = m.session_id AND e.seq > m.after AND e.seq <= m.upto`.execute(db);
      for (const row of lags) lagsMs.push(Number(row.lag_ms));
      for (const row of moved) seen.set(row.session_id, row.last_seq);
    } catch (error) {
      // a killed connection or a restarting server: the next round reads again
      lagErrors += 1;
      if (lagErrors === 1) log(`lag sampling failed (it goes on): ${String(error)}`);
    }
  }
}

/** Runs the load and the faults for the time asked, then checks the store; returns the exit code. */
async function soak(): Promise<number> {
  const writerCount = Number(options.writers);
  for (let slot = 0; slot < writerCount; slot += 1) superviseWriter(slot);
  superviseDaemon();
  await Promise.all([...writers.map((writer) => writer.ready), daemon!.waitForLog('leader', 120_000)]);
  log('writers and daemon running: faults begin');
  const killer = options['no-connection-kills']
    ? undefined
    : startConnectionKiller({ adminUrl: serverUrl ?? server!.adminUrl, database: database.name, applicationNames: 'soak-%', intervalMs: [2_000, 8_000], random });
  const chaos: Promise<void>[] = [sampleLag()];
  if (!options['no-daemon-kills']) {
    chaos.push(
      every(3_000, 12_000, async () => {
        const target = daemon;
        if (!target?.isRunning()) return;
        killedOnPurpose.add(target);
        target.child.kill('SIGKILL');
        counts.daemonKills += 1;
      }),
    );
  }
  if (server && options['server-restarts']) {
    chaos.push(
      every(20_000, 40_000, async () => {
        const mode = counts.serverRestarts % 2 === 0 ? 'fast' : 'immediate';
        await server.restart(mode);
        counts.serverRestarts += 1;
        log(`server restarted (-m ${mode})`);
      }),
    );
  }

  const started = performance.now();
  while (performance.now() - started < minutes * 60_000) {
    await sleep(10_000);
    const behind = await readProjectionStatus(db, 'os_snapshot').then((status) => status.behind.events, () => '?');
    log(`${Math.round((performance.now() - started) / 1000)} s: ${counts.daemonKills} daemon kills, ${counts.daemonCrashes} daemon crashes, ${killer?.killed ?? 0} connections killed, ${counts.writerCrashes} writer crashes, ${behind} events behind`);
  }

  // The end: no more faults; writers finish their append; a daemon catches up and stops.
  stopping = true;
  await Promise.all(chaos);
  await killer?.stop();
  await Promise.all(writers.map((writer) => writer.stop()));
  await daemon?.stop('SIGKILL');
  const last = startDaemon(url, { owner: 'soak-daemon-last', args: ['--lease-ttl', '1000'] });
  const drainStart = performance.now();
  for (;;) {
    const status = await readProjectionStatus(db, 'os_snapshot');
    if (status.behind.events === 0 || performance.now() - drainStart > 120_000 || !last.isRunning()) break;
    await sleep(100);
  }
  await last.stop('SIGTERM');

  const units = readJournals(writers.map((writer) => writer.config.journal));
  const audit = await auditStore(db, units);
  const problems = storeProblems(audit);
  const verification = await verifyWithCli(url);
  const projected = Number((await db.selectFrom('projection_checkpoints').select('events_applied').where('projection', '=', 'os_snapshot').executeTakeFirst())?.events_applied ?? 0);
  const ms = (value: number) => (Number.isNaN(value) ? 'n/a' : `${Math.round(value)} ms`);

  const report = [
    `soak of ${minutes} min (seed ${seed}), ${writerCount} writers at ${options.rate} appends/s each`,
    `appended: ${audit.storedEvents} events stored; ${audit.acknowledgedEvents} acknowledged in ${audit.acknowledgedUnits} of ${audit.units} appends`,
    `projected: ${projected} events (checkpoint), drained in ${Math.round((performance.now() - drainStart) / 1000)} s after the load`,
    `lag (recorded_at to seen folded, polled every 100 ms; ${lagsMs.length} events): p50 ${ms(percentile(lagsMs, 50))}, p95 ${ms(percentile(lagsMs, 95))}, p99 ${ms(percentile(lagsMs, 99))}, max ${ms(percentile(lagsMs, 100))}`,
    `faults survived: ${counts.daemonKills} daemon kills (-9), ${killer?.killed ?? 0} connections killed in ${killer?.rounds ?? 0} rounds, ${counts.serverRestarts} server restarts`,
    `crashes (process restarted by the soak): ${counts.daemonCrashes} daemon, ${counts.writerCrashes} writer`,
    ...[...crashReasons].map(([reason, n]) => `  ${n} x ${reason}`),
    `lost (acknowledged, not stored): ${audit.lost.length}; doubled: ${audit.doubled.length}; stored in part: ${audit.halfStored.length}; misplaced: ${audit.misplaced.length}; holes: ${audit.holes.length}; strays: ${audit.strays}`,
    ...problems.map((problem) => `  ${problem}`),
    `verify --all: ${verification.clean ? 'clean' : 'FAILED'}: ${verification.verify.stdout.trim()}${verification.clean ? '' : `\n${verification.project.stderr}${verification.verify.stderr}`}`,
  ];
  process.stdout.write(`${report.join('\n')}\n`);
  return problems.length === 0 && verification.clean ? 0 : 1;
}

// A failed run still stops the private server and removes the journals.
try {
  process.exitCode = await soak();
} finally {
  stopping = true;
  for (const writer of writers) writer.child.kill('SIGKILL');
  daemon?.child.kill('SIGKILL');
  rmSync(journals, { recursive: true, force: true });
  if (options.keep) log(`kept database ${database.name}: ${url}`);
  else await database.drop().catch((error: unknown) => log(`could not drop ${database.name}: ${String(error)}`));
  await server?.stop();
}
