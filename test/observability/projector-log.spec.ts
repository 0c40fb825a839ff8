import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger, type LoggerOptions } from '../../src/observability/create-logger.js';
import { ProjectorLog } from '../../src/observability/projector-log.js';
import type { ProjectorEvent } from '../../src/projector/projector.js';

function capture(tty = false) {
  const stream = Object.assign(new PassThrough(), tty ? { isTTY: true } : {});
  const chunks: string[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk.toString()));
  return { stream, text: () => chunks.join('') };
}

const records = (text: string) =>
  text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

const batch = (eventsApplied: number, position: number, skipped = 0): ProjectorEvent => ({
  type: 'batch',
  result: {
    windowCount: eventsApplied + skipped,
    eventsApplied,
    skipped,
    stoppedCount: 0,
    stopped: [],
    resumedCount: 0,
    checkpoint: { transactionId: '77', position },
  },
  durationMs: 12.34,
});

function logTo(options: Partial<LoggerOptions> = {}) {
  const out = capture();
  const log = createLogger({ level: 'info', stream: out.stream, ...options }).child({ owner: 'host:1:abc' });
  return { out, log };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('the daemon logs', () => {
  it('are JSON lines with a level name, an ISO time, the owner, an event and a message', async () => {
    const { out, log } = logTo();
    const projectorLog = new ProjectorLog(log, { summarizeBatches: false });
    projectorLog.record({ type: 'leader', owner: 'host:1:abc', epoch: 4 });
    projectorLog.record({ type: 'standby', owner: 'host:1:abc', reason: 'the lease was taken' });
    projectorLog.record({ type: 'retry', error: new Error('connect ECONNREFUSED'), delayMs: 1000 });
    projectorLog.record({ type: 'retry', error: new Error('Connection terminated'), delayMs: 0 });
    projectorLog.record({ type: 'waiting', reason: 'another projector holds the lease' });
    const stoppedSession = { session_id: 's', seq: 1, position: 9, kind: 'resumed', reason: 'unreadable' as const, problem: 'field "turn": missing or null' };
    projectorLog.record({ type: 'sessions_stopped', sessions: [stoppedSession], count: 3 });
    await new Promise((resolve) => setImmediate(resolve));
    const [leader, standby, retry, listener, waiting, stopped] = records(out.text());
    expect(leader).toEqual({
      level: 'info',
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      pid: process.pid,
      hostname: expect.any(String),
      owner: 'host:1:abc',
      event: 'leader',
      epoch: 4,
      msg: 'leader: host:1:abc holds the lease (epoch 4)',
    });
    expect(standby).toMatchObject({ level: 'warn', event: 'standby', reason: 'the lease was taken', msg: 'standby: the lease was taken' });
    expect(retry).toMatchObject({ level: 'warn', event: 'retry', delayMs: 1000, err: { message: 'connect ECONNREFUSED' }, msg: 'retrying in 1000 ms: connect ECONNREFUSED' });
    expect(listener).toMatchObject({ level: 'warn', event: 'listener', error: 'Connection terminated' });
    expect(waiting).toMatchObject({ level: 'info', event: 'waiting', reason: 'another projector holds the lease' });
    expect(stopped).toMatchObject({ level: 'error', event: 'sessions_stopped', count: 3, sessions: [stoppedSession] });
    expect(stopped!.msg).toBe(
      'stopped session "s" at seq 1 (unreadable): field "turn": missing or null (and 2 more sessions; see os-audit status); every other session goes on',
    );
  });

  it('sum batches up every five seconds, and the rest on close; each batch at debug', async () => {
    vi.useFakeTimers();
    const { out, log } = logTo({ level: 'debug' });
    const projectorLog = new ProjectorLog(log, { summarizeBatches: true });
    projectorLog.record(batch(500, 10));
    projectorLog.record(batch(300, 20, 2));
    vi.advanceTimersByTime(5000);
    vi.advanceTimersByTime(5000);
    projectorLog.record(batch(40, 30));
    projectorLog.close();
    vi.useRealTimers();
    await new Promise((resolve) => setImmediate(resolve));
    const all = records(out.text());
    expect(all.filter((record) => record.event === 'batch')).toEqual([
      expect.objectContaining({ level: 'debug', events: 500, skipped: 0, durationMs: 12.3 }),
      expect.objectContaining({ level: 'debug', events: 300, skipped: 2 }),
      expect.objectContaining({ level: 'debug', events: 40 }),
    ]);
    expect(all.filter((record) => record.event === 'projected')).toEqual([
      expect.objectContaining({
        level: 'info',
        events: 800,
        skipped: 2,
        batches: 2,
        checkpoint: { transactionId: '77', position: 20 },
        msg: 'projected 800 events in 2 batches; 2 events set aside in projection_errors (checkpoint: transaction 77, position 20)',
      }),
      expect.objectContaining({ events: 40, batches: 1, checkpoint: { transactionId: '77', position: 30 } }),
    ]);
  });

  it('respect the level', async () => {
    const { out, log } = logTo({ level: 'warn' });
    new ProjectorLog(log, { summarizeBatches: false }).record({ type: 'leader', owner: 'o', epoch: 1 });
    log.warn({ event: 'x' }, 'shown');
    await new Promise((resolve) => setImmediate(resolve));
    expect(records(out.text()).map((record) => record.msg)).toEqual(['shown']);
  });

  it('are pretty on a terminal (or when asked), one readable line each', async () => {
    for (const { tty, format } of [{ tty: true, format: undefined }, { tty: false, format: 'pretty' as const }]) {
      const out = capture(tty);
      const log = createLogger({ level: 'info', format, stream: out.stream }).child({ owner: 'o' });
      new ProjectorLog(log, { summarizeBatches: false }).record({ type: 'leader', owner: 'o', epoch: 2 });
      await new Promise((resolve) => setImmediate(resolve));
      const plain = out.text().replace(/\x1b\[[0-9;]*m/g, '');
      expect(plain).toMatch(/^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] INFO: leader: o holds the lease \(epoch 2\)\n$/);
      expect(out.text().includes('\x1b[')).toBe(tty);
    }
  });

  it('name the projection in a pretty line, as the JSON line does', async () => {
    const out = capture(false);
    const log = createLogger({ level: 'info', format: 'pretty', stream: out.stream }).child({ owner: 'o' });
    new ProjectorLog(log.child({ projection: 'os_snapshot_v0_2_60' }), { summarizeBatches: false }).record({ type: 'waiting', reason: 'another daemon leads' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(out.text()).toMatch(/^\[[^\]]+\] INFO: os_snapshot_v0_2_60: waiting: another daemon leads\n$/);
  });
});
