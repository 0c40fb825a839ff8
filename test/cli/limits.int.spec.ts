import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { useTempDir } from '../support/log-files.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();
const tempDir = useTempDir();
const cli = (args: string[], stdin?: string | Buffer, env: NodeJS.ProcessEnv = {}) => runCliInProcess(args, { env: { DATABASE_URL: testDb.url, ...env }, stdin });
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const LONG = process.env.OS_AUDIT_LONG_TESTS === '1';

async function storedEvents(sessionId: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM session_events WHERE session_id = ${sessionId}`.execute(testDb.db);
  return rows[0]!.n;
}

describe('limits on the command line', () => {
  it('--max-event-bytes and OS_AUDIT_MAX_EVENT_BYTES bound an event of append and import (the flag wins); nothing is stored', async () => {
    const event = '{"kind":"x","s":"0123456789"}'; // 29 bytes
    const refused = await cli(['append', 'cli-lim', '--max-event-bytes', '28'], `{"kind":"x"}\n${event}\n`);
    expect(refused).toMatchObject({ code: 1, stderr: 'os-audit: <stdin>:2: session "cli-lim", seq 1: the event is 29 bytes, more than 28 (the limit is maxEventBytes, --max-event-bytes or OS_AUDIT_MAX_EVENT_BYTES); nothing was appended\n' });
    expect((await cli(['append', 'cli-lim'], `${event}\n`, { OS_AUDIT_MAX_EVENT_BYTES: '28' })).code).toBe(1);
    expect(await storedEvents('cli-lim')).toBe(0);
    expect((await cli(['append', 'cli-lim', '--max-event-bytes', '29'], `${event}\n`, { OS_AUDIT_MAX_EVENT_BYTES: '28' })).code).toBe(0);

    const stream = `{"session_id":"cli-lim-import","seq":0,"event":${event}}\n`;
    const imported = await cli(['import', '-'], stream, { OS_AUDIT_MAX_EVENT_BYTES: '28' });
    expect(imported.code).toBe(1);
    expect(imported.stderr).toMatch(/^os-audit: <stdin>:1: session "cli-lim-import", seq 0: the event is 29 bytes, more than 28 /);
    expect(await storedEvents('cli-lim-import')).toBe(0);
    expect((await cli(['import', '-', '--max-event-bytes', '29'], stream, { OS_AUDIT_MAX_EVENT_BYTES: '28' })).code).toBe(0);
  });

  it('--max-session-id-bytes and OS_AUDIT_MAX_SESSION_ID_BYTES bound the session of append, of a stream line and of a file name', async () => {
    expect(await cli(['append', 'cli-session-id', '--max-session-id-bytes', '13'], '{"kind":"x"}\n')).toMatchObject({
      code: 1,
      stderr: 'os-audit: session id "cli-session-id" is 14 bytes, longer than 13 (the limit is maxSessionIdBytes, --max-session-id-bytes or OS_AUDIT_MAX_SESSION_ID_BYTES); nothing was appended\n',
    });
    const stream = await cli(['import', '-'], '{"session_id":"cli-session-id","seq":0,"event":{"kind":"x"}}\n', { OS_AUDIT_MAX_SESSION_ID_BYTES: '13' });
    expect(stream.stderr).toMatch(/^os-audit: <stdin>:1: session id "cli-session-id" is 14 bytes, longer than 13 /);
    const dir = tempDir();
    writeFileSync(path.join(dir, 'cli-session-id.jsonl'), '{"seq":0,"event":{"kind":"x"}}\n');
    expect((await cli(['import', dir, '--max-session-id-bytes', '13'])).stderr).toMatch(/cli-session-id\.jsonl: session id "cli-session-id" is 14 bytes, longer than 13 /);
    expect(await storedEvents('cli-session-id')).toBe(0);
  });

  it('import of a file whose first line is too long names the file and the line, not a session named after the file', async () => {
    const file = path.join(tempDir(), 'cli-first-line.jsonl');
    writeFileSync(file, `{"session_id":"cli-first-line-s","seq":0,"event":{"kind":"x","s":"${'x'.repeat(300_000)}"}}\n`);
    const run = await cli(['import', file, '--max-event-bytes', '100']);
    expect(run).toMatchObject({ code: 1, stdout: expect.stringMatching(/^imported 0 new events/) });
    expect(run.stderr).toMatch(new RegExp(`^os-audit: ${file}:1: the line is longer than \\d+ bytes, more than an event of 100 bytes with its envelope; the rest of the input is not read \\(`, 'm'));
    expect(run.stderr).not.toContain('session "cli-first-line"');
  });

  it('refuses a limit that is no whole number of bytes from 1, as a usage error', async () => {
    expect(await cli(['append', 's', '--max-event-bytes', '0'], '')).toMatchObject({ code: 2, stderr: expect.stringMatching(/--max-event-bytes.*expected a whole number from 1/) });
    expect(await cli(['import', '-'], '', { OS_AUDIT_MAX_SESSION_ID_BYTES: '1k' })).toMatchObject({
      code: 2,
      stderr: 'os-audit: OS_AUDIT_MAX_SESSION_ID_BYTES must be a whole number of bytes from 1, got "1k"\n',
    });
  });

  it('append of arbitrary bytes, JSONL or a JSON array: appended, or exit 1 naming <stdin>, the line and the session, with nothing appended', async () => {
    const line = fc.oneof(
      fc.constant('{"kind":"x"}'),
      fc.integer({ min: 0, max: 3000 }).map((length) => `{"kind":"long","s":"${'x'.repeat(length)}"}`),
      fc.integer({ min: 1, max: 600 }).map((depth) => `{"kind":"deep","a":${'['.repeat(depth)}${']'.repeat(depth)}}`),
      fc.string({ unit: 'binary', maxLength: 60 }),
    );
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(line, fc.uint8Array({ maxLength: 100 })), { maxLength: 6 }), fc.boolean(), fc.boolean(), async (lines, asArray, limited) => {
        const sessionId = `cli-any-${++run}`;
        const texts = lines.map((item) => (typeof item === 'string' ? Buffer.from(item) : Buffer.from(item)));
        const body = asArray ? [Buffer.from('['), ...texts.flatMap((text, index) => (index === 0 ? [text] : [Buffer.from(',\n'), text])), Buffer.from(']')] : texts.flatMap((text) => [text, Buffer.from('\n')]);
        const result = await cli(['append', sessionId, ...(limited ? ['--max-event-bytes', '100'] : [])], Buffer.concat(body));
        if (result.code === 0) return;
        expect(result.code).toBe(1);
        expect(result.stderr).toMatch(new RegExp(`^os-audit: <stdin>(:\\d+)?: session "${sessionId}"(, seq \\d+)?(, event #\\d+)?: .+; nothing was appended\\n$`));
        expect(await storedEvents(sessionId)).toBe(0);
      }),
      { numRuns: 60 },
    );
  });

  it('refuses a JSON array larger than an event may be with its envelope: append holds it whole; as JSONL it is appended', async () => {
    const events = Array.from({ length: 10_000 }, () => '{"kind":"x"}');
    const limits = ['--max-event-bytes', '20', '--max-session-id-bytes', '1'];
    const refused = await cli(['append', 'a', ...limits], `[${events.join(',\n')}]\n`);
    expect(refused.stderr).toMatch(/^os-audit: <stdin>:\d+: session "a": the JSON array is longer than 65562 bytes, more than one event may be; write JSONL to append more .*; nothing was appended\n$/);
    expect(await storedEvents('a')).toBe(0);
    expect(await cli(['append', 'a', ...limits], `${events.join('\n')}\n`)).toMatchObject({ code: 0 });
    expect(await storedEvents('a')).toBe(10_000);
  });
});

/** A hook that reports the process's peak resident memory when it exits. */
function rssReporter(): string {
  const file = path.join(tempDir(), 'report-rss.mjs');
  writeFileSync(file, "process.on('exit', () => process.stderr.write(`max-rss-kb=${process.resourceUsage().maxRSS}\\n`));\n");
  return file;
}

/**
 * Runs the real command line with a small heap, its standard input `total` bytes of garbage
 * made as it is read (never written to disk), and tells how much of it was taken.
 */
async function runOnGarbage(args: readonly string[], total: number, line: Buffer | undefined) {
  const child = spawn(process.execPath, ['--max-old-space-size=128', '--import', 'tsx', '--import', rssReporter(), path.join(root, 'src/cli/main.ts'), ...args], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: testDb.url },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
  const chunk = line === undefined ? Buffer.alloc(2 ** 20, '{"garbage": [1, 2, "no newline"') : Buffer.alloc(2 ** 20, line);
  let written = 0;
  const garbage = Readable.from(
    (function* () {
      while (written < total) {
        written += chunk.length;
        yield chunk;
      }
    })(),
  );
  const started = performance.now();
  const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? -1)));
  await pipeline(garbage, child.stdin).catch(() => {}); // EPIPE once the command stops reading
  const code = await exited;
  const seconds = (performance.now() - started) / 1000;
  const maxRssMiB = Number(/max-rss-kb=(\d+)/.exec(output.stderr)?.[1]) / 1024;
  return { code, ...output, written, seconds, maxRssMiB };
}

describe('a multi-GB stream of garbage on standard input: fails fast, with bounded memory', () => {
  const total = (LONG ? 16 : 4) * 2 ** 30;
  const cases = [
    { name: 'import -, no newline', args: ['import', '-'], line: undefined, error: /^os-audit: <stdin>:1: the line is longer than 67180544 bytes/m },
    { name: 'append, no newline', args: ['append', 'garbage'], line: undefined, error: /^os-audit: <stdin>:1: session "garbage": the line is longer than 67180544 bytes/m },
    { name: 'import -, lines', args: ['import', '-'], line: Buffer.from('\u0000garbage\t{[}\n'), error: /^os-audit: <stdin>:1: invalid JSON/m },
    { name: 'append, lines', args: ['append', 'garbage'], line: Buffer.from('{"kind":"x"}\n{"kind":\n'), error: /^os-audit: <stdin>:2: session "garbage": invalid JSON/m },
  ];
  for (const { name, args, line, error } of cases) {
    it(`${name}: stops at the first bad line, having read under 100 MB of ${total / 2 ** 30} GB`, async () => {
      const run = await runOnGarbage(args, total, line);
      console.log(`${name}: exit ${run.code} after ${run.seconds.toFixed(1)} s, ${(run.written / 2 ** 20).toFixed(0)} MiB written, peak RSS ${run.maxRssMiB.toFixed(0)} MiB`);
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr).toMatch(error);
      expect(run.written).toBeLessThan(100 * 2 ** 20);
      // The line limit (64 MiB) and the runtime's own; unbounded reading would take GBs.
      expect(run.maxRssMiB).toBeLessThan(400);
      expect(await storedEvents('garbage')).toBe(0);
    }, 120_000);
  }
});

describe.runIf(LONG)('one 50 MB event through the real command line (OS_AUDIT_LONG_TESTS=1)', () => {
  it('appends and imports it', async () => {
    const event = `{"kind":"big","s":"${'x'.repeat(50 * 2 ** 20)}"}`;
    const dir = tempDir();
    writeFileSync(path.join(dir, 'bare.jsonl'), `${event}\n`);
    writeFileSync(path.join(dir, 'big-import.jsonl'), `{"seq":0,"event":${event}}\n`);
    for (const args of [['append', 'big-append', path.join(dir, 'bare.jsonl')], ['import', path.join(dir, 'big-import.jsonl')]]) {
      const started = performance.now();
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'src/cli/main.ts'), ...args], { cwd: root, env: { ...process.env, DATABASE_URL: testDb.url }, stdio: 'inherit' });
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      console.log(`${args[0]} of a 50 MB event: exit ${code} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
      expect(code).toBe(0);
    }
    expect([await storedEvents('big-append'), await storedEvents('big-import')]).toEqual([1, 1]);
  }, 300_000);
});
