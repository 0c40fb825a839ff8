import { sql } from 'kysely';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { storeIsDistributed } from '../../src/db/distributed-store.js';
import { verifyOsSnapshots } from '../../src/deprecated-os-snapshot.js';
import type { JsonValue } from '../../src/json/json-value.js';
import { readProjectionStatus } from '../../src/projector/projection-status.js';
import { EventStore } from '../../src/store/event-store.js';
import {
  backendsOf,
  countEvents,
  type DaemonProcess,
  foldedTotals,
  lastSeqsOffTheCheckpoint,
  pollUntil,
  readCheckpointRow,
  readLeaseRow,
  sessionsNotCaughtUp,
  sleep,
  transactionStatus,
} from '../support/daemon-process.js';
import { useDaemonProcesses } from '../support/use-daemon-processes.js';
import { sampleEvent } from '../support/log-files.js';
import { useTestDatabase } from '../support/test-database.js';

/**
 * `os-audit project` as real processes: SIGKILL in the middle of a batch, two daemons racing
 * for the lease, and clean stops on SIGTERM / SIGINT. The tests share one database and run in
 * order; each appends its own sessions and checks the whole projection at the end.
 */
const testDb = useTestDatabase();
const startProcess = useDaemonProcesses();
/** Daemons of the seed's projection alone: what is proved here is one projection's lease and batches (many-projections.int.spec.ts runs several). */
const startDaemon: typeof startProcess = (url, options) => startProcess(url, { ...options, args: ['--projection', 'os_snapshot', ...(options.args ?? [])] });
let onCitus = false;
beforeAll(async () => {
  onCitus = await storeIsDistributed(testDb.db);
});
/**
 * `--batch-size` for `events`: five times as many on Citus, whose batch costs a dozen
 * distributed statements (about half a second here) whatever its size, so that each backlog
 * still takes several batches and is folded within the tests' time.
 */
const batchSize = (events: number) => String(onCitus ? events * 5 : events);

const events = (count: number, from = 0) => Array.from({ length: count }, (_, i) => sampleEvent(from + i) as JsonValue);

/** Appends 200 events to each of `sessions` new sessions, one append per session, four at a time. */
async function appendBacklog(prefix: string, sessions: number): Promise<string[]> {
  const store = new EventStore(testDb.db);
  const ids = Array.from({ length: sessions }, (_, i) => `${prefix}-${String(i).padStart(3, '0')}`);
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < ids.length) await store.append(ids[next++]!, events(200));
    }),
  );
  return ids;
}

/** Waits until `daemon` has moved the checkpoint past every stored event (status: 0 behind); returns their count. */
async function waitCaughtUp(daemon: DaemonProcess, timeoutMs = 60_000): Promise<number> {
  return pollUntil(
    `${daemon.owner} to catch up`,
    async () => {
      if (!daemon.isRunning()) throw new Error(`${daemon.owner} exited before catching up; stderr:\n${daemon.stderr()}`);
      const total = await countEvents(testDb.db);
      const status = await readProjectionStatus(testDb.db, 'os_snapshot');
      return status.behind.events === 0 ? total : undefined;
    },
    { timeoutMs, intervalMs: 50, explain: () => explainProgress(daemon) },
  );
}

async function explainProgress(...daemons: DaemonProcess[]): Promise<string> {
  const { behind, checkpoint, leader, horizonHeldBy, lastError } = await readProjectionStatus(testDb.db, 'os_snapshot');
  const total = await countEvents(testDb.db);
  const state = JSON.stringify({ total, behind, eventsApplied: checkpoint.eventsApplied, leader, horizonHeldBy, lastError });
  return `${state}${daemons.map((daemon) => `\n${daemon.owner} stderr:\n${daemon.stderr()}`).join('')}`;
}

/**
 * The whole projection checks out: nothing folded twice or skipped, checkpoint and tables agree,
 * every session is up to date; and the snapshots of `sessions` (default all) equal the fold of
 * their logs, none pending.
 */
async function expectProjectionComplete(sessions?: readonly string[]): Promise<void> {
  const total = await countEvents(testDb.db);
  const report = await verifyOsSnapshots(testDb.db, sessions ? { sessions } : { all: true });
  expect(report.mismatches).toEqual([]);
  expect(report.pending).toEqual([]);
  if (!sessions) {
    const stored = await testDb.db.selectFrom('sessions').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    expect(report.checked).toBe(Number(stored.n));
  }
  expect(await sessionsNotCaughtUp(testDb.db)).toEqual([]);
  const totals = await foldedTotals(testDb.db);
  expect(totals.snapshots).toEqual(totals.log);
  expect(totals.snapshots.events).toBe(total);
  expect((await readCheckpointRow(testDb.db)).events_applied).toBe(total);
  expect(await lastSeqsOffTheCheckpoint(testDb.db)).toEqual([]);
}

/** The daemon's epoch from its (first) leader log record, which names it as the lease owner. */
async function leaderEpoch(daemon: DaemonProcess, timeoutMs = 30_000): Promise<{ epoch: number; at: number }> {
  const record = await daemon.waitForLog('leader', timeoutMs);
  expect(record).toMatchObject({ owner: daemon.owner, level: 'info', epoch: expect.any(Number), msg: `leader: ${daemon.owner} holds the lease (epoch ${record.epoch})` });
  return { epoch: record.epoch as number, at: record.at };
}

const leaderLogs = (daemon: DaemonProcess) => daemon.logs.filter((record) => record.event === 'leader');

/** It stopped cleanly, said so last, and wrote nothing but JSON log records on stderr. */
function expectCleanStopLogs(daemon: DaemonProcess): void {
  expect(daemon.logs.at(-1)).toMatchObject({ event: 'stopped', owner: daemon.owner, msg: 'os-audit projector stopped; leases released' });
  expect(daemon.logs).toHaveLength(daemon.lines.length);
}

/**
 * SIGKILLs `daemon` as soon as the checkpoint is past `atLeast` events (and short of `total`)
 * while one of its connections runs a statement of a transaction that has written; returns
 * that transaction's fate once the server has closed the dead daemon's connections.
 */
async function killInsideBatch(daemon: DaemonProcess, total: number, atLeast: number) {
  const target = await pollUntil(
    `${daemon.owner} to be inside a batch with the projection partly done`,
    async () => {
      const { events_applied } = await readCheckpointRow(testDb.db);
      if (events_applied >= total) throw new Error(`${daemon.owner} caught up before it could be killed: make the backlog bigger`);
      if (events_applied < atLeast) return undefined;
      const busy = (await backendsOf(testDb.db, daemon.applicationName)).find(
        (backend) => backend.backend_xid !== null && backend.state === 'active' && !/^\s*commit/i.test(backend.query ?? ''),
      );
      return busy && { eventsApplied: events_applied, xid: busy.backend_xid!, query: (busy.query ?? '').trim().split('\n')[0]! };
    },
    { timeoutMs: 60_000, intervalMs: 10, explain: () => explainProgress(daemon) },
  );
  daemon.child.kill('SIGKILL');
  expect(await daemon.exited).toEqual({ code: null, signal: 'SIGKILL' });
  return { ...target, status: await fateOfTransaction(daemon, target.xid) };
}

/**
 * Holds `LOCK TABLE os_signals IN SHARE MODE` until the daemon's batch statement waits for it,
 * SIGKILLs the daemon there, then lets the statement run to its end: the server holds the
 * whole statement, so it finishes it (and commits it, or not) without the daemon.
 */
async function killFrozenInFold(daemon: DaemonProcess) {
  const blocker = new pg.Client({ connectionString: testDb.url, application_name: 'crash-blocker' });
  await blocker.connect();
  let target: { xid: string | null; waitsFor: (string | null)[]; eventsApplied: number };
  try {
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE os_signals IN SHARE MODE');
    target = await pollUntil(
      `${daemon.owner} to wait for os_signals in its fold statement`,
      async () => {
        const waiting = (await backendsOf(testDb.db, daemon.applicationName)).find((backend) => backend.wait_event_type === 'Lock');
        if (!waiting) return undefined;
        const { rows } = await sql<{ relation: string | null }>`
          SELECT relation::regclass::text AS relation FROM pg_locks WHERE pid = ${waiting.pid} AND NOT granted`.execute(testDb.db);
        return { xid: waiting.backend_xid, waitsFor: rows.map((row) => row.relation), eventsApplied: (await readCheckpointRow(testDb.db)).events_applied };
      },
      { timeoutMs: 30_000, intervalMs: 10, explain: () => explainProgress(daemon) },
    );
    daemon.child.kill('SIGKILL');
    expect(await daemon.exited).toEqual({ code: null, signal: 'SIGKILL' });
  } finally {
    await blocker.query('ROLLBACK').catch(() => {});
    await blocker.end();
  }
  return { ...target, status: await fateOfTransaction(daemon, target.xid) };
}

/**
 * Waits until the server has closed a dead daemon's connections, then says how `xid` ended
 * ('no transaction id' when the statement had not written anything in a transaction).
 */
async function fateOfTransaction(daemon: DaemonProcess, xid: string | null) {
  await pollUntil(`the server to close ${daemon.owner}'s connections`, async () => (await backendsOf(testDb.db, daemon.applicationName)).length === 0, {
    timeoutMs: 30_000,
  });
  return xid === null ? 'no transaction id' : transactionStatus(testDb.db, xid);
}

/**
 * After a crash: the projection is part-way, and the snapshot tables hold exactly the batches
 * the checkpoint went past. Sessions reached verify against their logs up to their last_seq;
 * the others are pending.
 */
async function expectWholeBatchesOnly(ids: readonly string[], total: number): Promise<void> {
  const checkpoint = await readCheckpointRow(testDb.db);
  expect(checkpoint.events_applied).toBeGreaterThan(0);
  expect(checkpoint.events_applied).toBeLessThan(total);
  expect(await lastSeqsOffTheCheckpoint(testDb.db)).toEqual([]);
  const partial = await foldedTotals(testDb.db);
  expect(partial.snapshots).toEqual(partial.log);
  expect(partial.snapshots.events).toBe(checkpoint.events_applied);
  const projected = new Set((await testDb.db.selectFrom('os_snapshots').select('session_id').execute()).map((row) => row.session_id));
  const report = await verifyOsSnapshots(testDb.db, { all: true });
  expect(report.mismatches).toEqual([]);
  expect(report.checked).toBe(ids.length);
  expect(report.pending).toEqual(ids.filter((id) => !projected.has(id)));
  expect(report.pending.length).toBeGreaterThan(0);
}

describe('os-audit project as a process', () => {
  it('SIGKILL in the middle of a batch keeps no half batch, and a new daemon finishes exactly once', async () => {
    const ids = await appendBacklog('crash', 300);
    const total = await countEvents(testDb.db);
    expect(total).toBe(60_000);

    // First crash: wherever the daemon is once a fifth is done (almost surely inside a batch).
    const first = startDaemon(testDb.url, { owner: 'crash-a', args: ['--batch-size', batchSize(500)] });
    expect((await leaderEpoch(first)).epoch).toBe(1);
    const atRandom = await killInsideBatch(first, total, total / 5);
    console.info(`crash test: 1st SIGKILL at ${atRandom.eventsApplied}/${total} events applied, in: ${atRandom.query}; that transaction: ${atRandom.status}`);
    // It may have committed in the instant between the look and the kill; usually it is rolled back.
    expect(['aborted', 'committed']).toContain(atRandom.status);
    await expectWholeBatchesOnly(ids, total);

    // Second crash, certainly inside a batch: the test holds a lock that stops the daemon's batch
    // statement (its writes to os_signals) until the daemon is dead. The server has the whole
    // statement: after the kill it runs it to its end and commits it, under the lease it renewed
    // (still the dead daemon's), so the checkpoint moves one whole batch on.
    const second = startDaemon(testDb.url, { owner: 'crash-b', args: ['--batch-size', batchSize(2000)] });
    expect((await leaderEpoch(second)).epoch).toBe(2);
    const frozen = await killFrozenInFold(second);
    console.info(`crash test: 2nd SIGKILL at ${frozen.eventsApplied}/${total} events applied, frozen in the batch statement`);
    expect(frozen.waitsFor).toEqual(['os_signals']);
    if (await storeIsDistributed(testDb.db)) {
      // On Citus a batch is a transaction of several statements the daemon sends, not one the server holds whole: the kill rolls it all back.
      expect(frozen.status).toBe('aborted');
      expect((await readCheckpointRow(testDb.db)).events_applied).toBe(frozen.eventsApplied);
    } else {
      expect((await readCheckpointRow(testDb.db)).events_applied).toBe(frozen.eventsApplied + 2000);
    }
    await expectWholeBatchesOnly(ids, total);

    // A third daemon (another owner) takes over once the dead one's lease expires, and finishes.
    const third = startDaemon(testDb.url, { owner: 'crash-c', args: ['--batch-size', batchSize(500)] });
    expect((await leaderEpoch(third)).epoch).toBe(3);
    await waitCaughtUp(third);
    expect(await third.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expectCleanStopLogs(third);
    expect(leaderLogs(third)).toHaveLength(1);

    await expectProjectionComplete();
    expect(await countEvents(testDb.db)).toBe(total);
    expect((await readCheckpointRow(testDb.db)).epoch).toBe(3);
  }, 120_000);

  it('two daemons: one leader while both live, and the standby takes over within the lease TTL after a SIGKILL', async () => {
    const pairIds = await appendBacklog('pair', 60);
    const backlogTotal = await countEvents(testDb.db);
    const before = await readLeaseRow(testDb.db);

    const a = startDaemon(testDb.url, { owner: 'pair-a', args: ['--batch-size', batchSize(500)] });
    const b = startDaemon(testDb.url, { owner: 'pair-b', args: ['--batch-size', batchSize(500)] });
    const first = await Promise.any([a, b].map((daemon) => leaderEpoch(daemon).then(() => daemon)));
    const [leader, standby] = first === a ? [a, b] : [b, a];
    await standby.waitForLog('started');

    // While the backlog is folded, and a while longer (beyond the TTL, so renewals count too),
    // the lease stays with the leader and its epoch does not change.
    const owners = new Set<string>();
    const epochs = new Set<number>();
    const sampleLease = async () => {
      const lease = (await readLeaseRow(testDb.db))!;
      owners.add(lease.owner);
      epochs.add(lease.epoch);
    };
    await pollUntil(
      'the pair to catch up',
      async () => {
        await sampleLease();
        const status = await readProjectionStatus(testDb.db, 'os_snapshot');
        return status.behind.events === 0;
      },
      { timeoutMs: 60_000, intervalMs: 50, explain: () => explainProgress(a, b) },
    );
    const idleUntil = performance.now() + 2_500;
    while (performance.now() < idleUntil) {
      await sampleLease();
      await sleep(50);
    }
    expect([...owners]).toEqual([leader.owner]);
    expect([...epochs]).toEqual([(before?.epoch ?? 0) + 1]);
    expect(leader.isRunning() && standby.isRunning()).toBe(true);
    expect(leaderLogs(standby)).toEqual([]);
    expect(leaderLogs(leader)).toHaveLength(1);
    expect(leader.logs.filter((record) => record.event === 'standby')).toEqual([]);
    await expectProjectionComplete(pairIds);

    // Kill the leader, append more at once, and time the handover.
    const leaseAtKill = (await readLeaseRow(testDb.db))!;
    const killedAt = performance.now();
    leader.child.kill('SIGKILL');
    const store = new EventStore(testDb.db);
    for (let i = 0; i < 20; i += 1) await store.append(i % 2 === 0 ? `pair-${String(i).padStart(3, '0')}` : `pair-late-${i}`, events(50, i));
    const total = backlogTotal + 20 * 50;
    expect(await leader.exited).toEqual({ code: null, signal: 'SIGKILL' });

    const takeover = await leaderEpoch(standby, 15_000);
    const caughtUp = await pollUntil(
      'the survivor to project the new events',
      async () => {
        const status = await readProjectionStatus(testDb.db, 'os_snapshot');
        return status.behind.events === 0 ? performance.now() : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 20, explain: () => explainProgress(standby) },
    );
    const toLeader = takeover.at - killedAt;
    const toCaughtUp = caughtUp - killedAt;
    console.info(`handover after SIGKILL (lease TTL 2000 ms): leader after ${Math.round(toLeader)} ms, new events projected after ${Math.round(toCaughtUp)} ms`);
    expect(takeover.epoch).toBe([...epochs][0]! + 1);
    // Not before the dead leader's lease ran out (by the database's clock)...
    const taken = (await readLeaseRow(testDb.db))!;
    expect(taken).toMatchObject({ owner: standby.owner, epoch: takeover.epoch });
    expect(taken.acquired_at.getTime()).toBeGreaterThanOrEqual(leaseAtKill.expires_at.getTime());
    // ...and well within 10 s.
    expect(toLeader).toBeLessThan(10_000);
    expect(toCaughtUp).toBeLessThan(10_000);

    expect(await standby.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expectCleanStopLogs(standby);
    await expectProjectionComplete();
    expect(await countEvents(testDb.db)).toBe(total);
  }, 120_000);

  it.each(['SIGTERM', 'SIGINT'] as const)('%s stops a busy daemon with exit code 0 and releases its lease; a new daemon leads at once', async (signal) => {
    const prefix = `stop-${signal.toLowerCase()}`;
    const ids = await appendBacklog(prefix, 50);
    const start = await readCheckpointRow(testDb.db);
    // A TTL far above the takeover times measured below: only a released lease explains them.
    const ttl = ['--lease-ttl', '10000', '--batch-size', batchSize(200)];

    const a = startDaemon(testDb.url, { owner: `${prefix}-a`, args: ttl });
    const { epoch } = await leaderEpoch(a);
    await pollUntil('the daemon to fold a batch', async () => (await readCheckpointRow(testDb.db)).events_applied > start.events_applied, {
      timeoutMs: 30_000,
      intervalMs: 10,
    });
    expect(await a.stop(signal)).toEqual({ code: 0, signal: null });
    expectCleanStopLogs(a);
    // It was stopped part-way through the backlog.
    expect((await readProjectionStatus(testDb.db, 'os_snapshot')).behind.events).toBeGreaterThan(0);
    const lease = await readLeaseRow(testDb.db);
    expect(lease).toMatchObject({ owner: a.owner, epoch, expired: true });
    await pollUntil(`${a.owner}'s connections to close`, async () => (await backendsOf(testDb.db, a.applicationName)).length === 0, { timeoutMs: 10_000 });

    // Whatever batch was running finished or rolled back: the tables agree with the checkpoint.
    expect(await lastSeqsOffTheCheckpoint(testDb.db)).toEqual([]);
    const partial = await foldedTotals(testDb.db);
    expect(partial.snapshots).toEqual(partial.log);
    expect(partial.snapshots.events).toBe((await readCheckpointRow(testDb.db)).events_applied);

    const b = startDaemon(testDb.url, { owner: `${prefix}-b`, args: ttl });
    const started = await b.waitForLog('started');
    const takeover = await leaderEpoch(b, 15_000);
    console.info(`${signal}: a new daemon led ${Math.round(takeover.at - started.at)} ms after it started (lease TTL 10000 ms)`);
    expect(takeover.epoch).toBe(epoch + 1);
    expect(takeover.at - started.at).toBeLessThan(3_000);

    await waitCaughtUp(b);
    expect(await b.stop(signal === 'SIGTERM' ? 'SIGINT' : 'SIGTERM')).toEqual({ code: 0, signal: null });
    expectCleanStopLogs(b);
    expect(await readLeaseRow(testDb.db)).toMatchObject({ owner: b.owner, epoch: epoch + 1, expired: true });
    await expectProjectionComplete(ids);
  }, 120_000);

  it('a standby running next to the leader takes over right after a clean stop, long before the TTL; a stopped standby leaves the lease alone', async () => {
    const ids = await appendBacklog('handover', 20);
    const ttl = ['--lease-ttl', '10000', '--batch-size', batchSize(500)];
    const a = startDaemon(testDb.url, { owner: 'handover-a', args: ttl });
    const { epoch } = await leaderEpoch(a);
    const b = startDaemon(testDb.url, { owner: 'handover-b', args: ttl });
    await b.waitForLog('started');
    // b is polling for the lease by now; give it a few tries.
    await pollUntil('b to connect', async () => (await backendsOf(testDb.db, b.applicationName)).length > 0, { timeoutMs: 15_000 });
    await sleep(300);
    expect(leaderLogs(b)).toEqual([]);
    expect(await readLeaseRow(testDb.db)).toMatchObject({ owner: a.owner, epoch, expired: false });

    const stoppedAt = performance.now();
    expect(await a.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expectCleanStopLogs(a);
    const takeover = await leaderEpoch(b, 15_000);
    const handover = takeover.at - stoppedAt;
    console.info(`clean handover (lease TTL 10000 ms): standby led ${Math.round(handover)} ms after SIGTERM to the leader`);
    expect(takeover.epoch).toBe(epoch + 1);
    expect(handover).toBeLessThan(3_000);

    // A standby stopped cleanly leaves the leader's lease alone.
    const c = startDaemon(testDb.url, { owner: 'handover-c', args: ttl });
    await c.waitForLog('started');
    await pollUntil('c to connect', async () => (await backendsOf(testDb.db, c.applicationName)).length > 0, { timeoutMs: 15_000 });
    await sleep(300);
    expect(await c.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(leaderLogs(c)).toEqual([]);
    expectCleanStopLogs(c);
    expect(await readLeaseRow(testDb.db)).toMatchObject({ owner: b.owner, epoch: epoch + 1, expired: false });

    const store = new EventStore(testDb.db);
    await store.append('handover-late', events(30));
    await waitCaughtUp(b);
    expect(await b.stop('SIGINT')).toEqual({ code: 0, signal: null });
    expectCleanStopLogs(b);
    expect(await readLeaseRow(testDb.db)).toMatchObject({ owner: b.owner, expired: true });
    await expectProjectionComplete([...ids, 'handover-late']);
  }, 120_000);
});
