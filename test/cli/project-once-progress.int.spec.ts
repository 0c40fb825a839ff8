import { type PassThrough, Readable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { CatchUpProgress } from '../../src/cli/catch-up-progress.js';
import { runCli } from '../../src/cli/run-cli.js';
import { EventStore } from '../../src/store/event-store.js';
import { sampleEvent } from '../support/log-files.js';
import { useTestDatabase } from '../support/test-database.js';
import { fakeStream, visibleText } from '../support/fake-terminal.js';

const testDb = useTestDatabase({ perTest: true });

/** A backlog of 4 sessions of 3 events: 12 events behind for each projection. */
async function appendBacklog(): Promise<void> {
  const store = new EventStore(testDb.db);
  for (const session of ['p1', 'p2', 'p3', 'p4']) await store.append(session, [sampleEvent(0), sampleEvent(1), sampleEvent(2)]);
}

async function projectOnce(stderr: PassThrough, projection = 'os_snapshot') {
  const stdout = fakeStream(false);
  const code = await runCli(['project', '--once', '--projection', projection, '--batch-size', '3', '--log-level', 'warn'], {
    stdin: Readable.from(['']),
    stdout: stdout.stream,
    stderr,
    env: { DATABASE_URL: testDb.url },
  });
  await new Promise((resolve) => setImmediate(resolve));
  return { code, stdout: stdout.written() };
}

describe('project --once progress', () => {
  it('draws a live line on a terminal: events folded of those behind, and the rate', async () => {
    await appendBacklog();
    const stderr = fakeStream(true, 120);
    const run = await projectOnce(stderr.stream);
    expect(run).toMatchObject({ code: 0, stdout: expect.stringMatching(/^os_snapshot: projected 12 events in \d+ batches/) });
    const text = visibleText(stderr.written());
    // The bar starts at the first batch, and its last state is drawn before it is cleared.
    expect(text).toMatch(/projecting [█░]{30} 25% \| 3\/12 events folded, \d+ events\/s \| ETA/);
    expect(text).toMatch(/projecting █{30} 100% \| 12\/12 events folded, \d+ events\/s \| ETA/);
    expect(stderr.written()).toMatch(/\x1b\[2K$/);
  });

  it('erases the bar before a log line, so that the line stands alone', async () => {
    await appendBacklog();
    // v0.2.60 needs a budget_exceeded's operation_id: the session stops, with an error in the log.
    await new EventStore(testDb.db).append('p-stop', [{ kind: 'budget_exceeded', turn: 1, budget: 'cost' }]);
    const stderr = fakeStream(true, 120);
    expect(await projectOnce(stderr.stream, 'os_snapshot_v0_2_60')).toMatchObject({ code: 0, stdout: expect.stringMatching(/1 session stopped/) });
    expect(stderr.written()).toMatch(/projecting [^\n]*\r\x1b\[2K[^\n]*stopped session "p-stop"/);
  });

  it('draws nothing when stderr is not a terminal', async () => {
    await appendBacklog();
    const stderr = fakeStream(false);
    expect(await projectOnce(stderr.stream)).toMatchObject({ code: 0, stdout: expect.stringMatching(/^os_snapshot: projected 12 events/) });
    expect(stderr.written()).toBe('');
  });

  it('logs a progress line every interval when stderr is not a terminal', async () => {
    const logged = fakeStream(false);
    const progress = await CatchUpProgress.start(testDb.db, logged.stream, pino(logged.stream), ['os_snapshot'], 40);
    try {
      progress.record(500);
      await new Promise((resolve) => setTimeout(resolve, 130));
    } finally {
      progress.done();
    }
    const lines = logged.written().trimEnd().split('\n').map((line) => JSON.parse(line) as { event: string; eventsFolded: number; msg: string });
    expect(lines.length).toBeGreaterThanOrEqual(2);
    expect(lines[0]).toMatchObject({ event: 'progress', eventsFolded: 500, msg: expect.stringMatching(/^catching up: 500 events folded, \d+ events\/s$/) });
    const count = lines.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    // Done: no more lines.
    expect(logged.written().trimEnd().split('\n')).toHaveLength(count);
  });
});
