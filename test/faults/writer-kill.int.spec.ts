import { mkdirSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Prng } from '../../bench/prng.js';
import { type AppendUnit, taggedEvent } from '../support/append-journal.js';
import { startCli } from '../support/cli-process.js';
import { backendsOf, countEvents, pollUntil, sleep } from '../support/daemon-process.js';
import { sessionLine, writeSessionFile } from '../support/log-files.js';
import { useTestDatabase } from '../support/test-database.js';
import { scaled, useFaultRun } from '../support/use-fault-run.js';

/**
 * A writer SIGKILLed in the middle of a large append (through the library and through
 * `os-audit append`) and of an `import`: nothing is stored in part, and doing it again stores
 * the rest exactly once.
 */
const testDb = useTestDatabase({ perTest: true });
const run = useFaultRun();

const BIG = scaled(10_000, 200_000);
const IMPORT_SESSIONS = scaled(20, 100);
const IMPORT_EVENTS = scaled(1_000, 5_000);

/** Waits until a connection named `applicationName` runs a statement of a transaction that has written. */
function inTheMiddle(applicationName: string, timeoutMs = 60_000) {
  return pollUntil(
    `${applicationName} to be in the middle of its write`,
    async () => (await backendsOf(testDb.db, applicationName)).some((backend) => backend.state === 'active' && backend.backend_xid !== null),
    { timeoutMs, intervalMs: 5 },
  );
}

/** Events stored in `sessionId`. */
async function storedIn(sessionId: string): Promise<number> {
  const row = await testDb.db.selectFrom('session_events').where('session_id', '=', sessionId).select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** An append of `count` tagged events of unit `id`, as a unit and as the JSONL text of a file. */
function bigUnit(id: string, sessionId: string, count: number): { unit: AppendUnit; jsonl: string } {
  const texts = Array.from({ length: count }, (_, i) => JSON.stringify(taggedEvent(id, i)));
  return { unit: { id, sessionId, texts }, jsonl: `${texts.join('\n')}\n` };
}

describe('a writer killed in the middle of a large append', () => {
  it('EventStore.append: the batch is stored whole or not at all, next to a steady writer of the same session', { timeout: scaled(120_000, 600_000) }, async () => {
    const sessions = ['big-append'];
    const steady = run.startWriter({ name: 'fault-steady', url: testDb.url, api: 'event-store', sessions, appendsPerSecond: 20, batch: [1, 10] });
    await steady.ready;
    // Watched from before it connects: its one append starts as soon as it is ready, and may be over quickly.
    const big = run.startWriter({ name: 'fault-big-1', url: testDb.url, api: 'event-store', sessions, appendsPerSecond: 1, batch: [BIG, BIG], units: 1 });
    const middle = inTheMiddle('fault-big-1');
    await big.ready;
    await middle;
    await sleep(new Prng(Date.now()).int(0, 50));
    await big.kill();
    expect(run.journalUnits().find((unit) => unit.id === 'fault-big-1-0')).toMatchObject({ texts: { length: BIG } });

    const again = run.startWriter({ name: 'fault-big-2', url: testDb.url, api: 'event-store', sessions, appendsPerSecond: 1, batch: [BIG, BIG], units: 1 });
    expect(await again.exited).toEqual({ code: 0, signal: null });
    await steady.stop();
    const units = run.journalUnits();
    expect(units.find((unit) => unit.id === 'fault-big-2-0')?.seqs).toHaveLength(BIG);
    expect(units.filter((unit) => unit.id.startsWith('fault-steady') && unit.seqs).length).toBeGreaterThan(0);
    await run.expectStoreRight(testDb.db, testDb.url);
  });

  it('os-audit append of a large file: nothing appended, and the same file appended again', { timeout: scaled(120_000, 600_000) }, async () => {
    const { unit, jsonl } = bigUnit('cli-big', 'cli-big', BIG);
    const file = run.file('big.jsonl');
    writeFileSync(file, jsonl);
    const first = startCli(['append', 'cli-big', file], { databaseUrl: testDb.url, applicationName: 'fault-cli-append-1' });
    await inTheMiddle('fault-cli-append-1');
    first.child.kill('SIGKILL');
    expect((await first.result).signal).toBe('SIGKILL');
    await pollUntil('the killed append to end on the server', async () => (await backendsOf(testDb.db, 'fault-cli-append-1')).length === 0);
    const stored = await storedIn('cli-big');
    expect([0, BIG]).toContain(stored);
    if (stored === 0) {
      const again = await startCli(['append', 'cli-big', file], { databaseUrl: testDb.url }).result;
      expect(again.stdout).toBe(`appended ${BIG} events to "cli-big" as seqs 0..${BIG - 1}\n`);
      unit.seqs = unit.texts.map((_, i) => i);
    }
    await run.expectStoreRight(testDb.db, testDb.url, [unit]);
  });

  it('os-audit import of a folder: each session file whole or not at all, and the import run again resumes', { timeout: scaled(120_000, 600_000) }, async () => {
    const folder = run.file('logs');
    mkdirSync(folder);
    const units: AppendUnit[] = [];
    for (let s = 0; s < IMPORT_SESSIONS; s += 1) {
      const sessionId = `import-${String(s).padStart(3, '0')}`;
      const texts = Array.from({ length: IMPORT_EVENTS }, (_, i) => JSON.stringify(taggedEvent(sessionId, i)));
      writeSessionFile(folder, sessionId, texts.map((text, seq) => sessionLine(seq, text)));
      units.push({ id: sessionId, sessionId, texts });
    }
    const total = IMPORT_SESSIONS * IMPORT_EVENTS;
    const first = startCli(['import', folder], { databaseUrl: testDb.url, applicationName: 'fault-import-1' });
    // Killed once a few session files are in, long before the last.
    await pollUntil('a few sessions to be imported', async () => {
      const events = await countEvents(testDb.db);
      if (events >= total) throw new Error('the import finished before it could be killed: give it more to do');
      return events >= 3 * IMPORT_EVENTS;
    }, { timeoutMs: 60_000, intervalMs: 5 });
    first.child.kill('SIGKILL');
    expect((await first.result).signal).toBe('SIGKILL');
    await pollUntil('the killed import to end on the server', async () => (await backendsOf(testDb.db, 'fault-import-1')).length === 0);
    const before = await countEvents(testDb.db);
    expect(before % IMPORT_EVENTS).toBe(0); // whole files only
    expect(before).toBeLessThan(total);

    const again = await startCli(['import', folder], { databaseUrl: testDb.url }).result;
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(`imported ${total - before} new events; ${before} were already stored (${IMPORT_SESSIONS} sessions from ${IMPORT_SESSIONS} files)`);
    for (const unit of units) unit.seqs = unit.texts.map((_, i) => i);
    await run.expectStoreRight(testDb.db, testDb.url, units);
  });
});
