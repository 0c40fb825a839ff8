import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { builtInProjections } from '../../projections/index.js';
import { allMigrations } from '../../src/projector/migrate-projections.js';
import { sampleEvent, sessionLine, useTempDir, writeSessionFile } from '../support/log-files.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { createTestDatabase, useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();
const tempDir = useTempDir();
const cli = (args: string[], stdin?: string) => runCliInProcess(args, { env: { DATABASE_URL: testDb.url }, stdin });

describe('os-audit CLI', () => {
  it.each([[[]], [['migrate']], [['import']], [['append']], [['events']], [['project']], [['snapshot']], [['rebuild']], [['verify']], [['status']]])('prints help for %j', async (command) => {
    const run = await cli([...command, '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Usage: os-audit/);
  });

  it.each([
    [['bogus'], "error: unknown command 'bogus'", 'os-audit'],
    [['status', '--nope'], "error: unknown option '--nope'", 'os-audit status'],
    [['snapshot'], "error: missing required argument 'session'", 'os-audit snapshot'],
    [['db', 'start', '--nope'], "error: unknown option '--nope'", 'os-audit db start'],
  ])('a usage error %j is its line and a pointer to --help, not the whole help', async (args, line, command) => {
    expect(await cli(args)).toEqual({ code: 2, stdout: '', stderr: `${line}\n(see ${command} --help)\n` });
  });

  it.each(['1e3', '1.0', '0x10', ' 5', '+5', ''])('takes only whole numbers in decimal digits where the help says so: --at-seq %j is refused', async (text) => {
    expect(await cli(['snapshot', 's1', '--at-seq', text])).toEqual({
      code: 2,
      stdout: '',
      stderr: `error: option '--at-seq <seq>' argument '${text}' is invalid. expected a whole number from 0\n(see os-audit snapshot --help)\n`,
    });
  });

  it('migrates an empty database, and a second run applies nothing', async () => {
    const fresh = await createTestDatabase({ migrate: false });
    try {
      const env = { DATABASE_URL: fresh.url };
      expect(await runCliInProcess(['migrate'], { env })).toMatchObject({ code: 0, stdout: `applied ${Object.keys(allMigrations(builtInProjections)).join(', ')}\n` });
      expect(await runCliInProcess(['migrate'], { env })).toMatchObject({ code: 0, stdout: 'schema is up to date; nothing to apply\n' });
    } finally {
      await fresh.drop();
    }
  });

  it('imports, reports 0 new events the second time, and prints the log back exactly', async () => {
    const dir = tempDir();
    writeSessionFile(dir, 'cli-1', [
      sessionLine(0, sampleEvent(0)),
      sessionLine(1, '{"kind":"run_terminal","reason":"done","turns_used":2,"total_tokens":18446744073709551615}'),
      sessionLine(2, '{"kind":"llm_completed","turn":2,"message":{"content":"nul:\\u0000:end"}}'),
    ]);
    expect(await cli(['import', dir])).toMatchObject({ code: 0, stdout: 'imported 3 new events; 0 were already stored (1 session from 1 file)\n' });
    expect(await cli(['import', dir])).toMatchObject({ code: 0, stdout: 'imported 0 new events; 3 were already stored (1 session from 1 file)\n' });

    const events = await cli(['events', 'cli-1']);
    expect(events.code).toBe(0);
    const lines = events.stdout.trimEnd().split('\n');
    // Each event exactly as written.
    expect(lines[0]).toBe(`{"seq":0,"event":${JSON.stringify(sampleEvent(0))}}`);
    expect(lines[1]).toBe('{"seq":1,"event":{"kind":"run_terminal","reason":"done","turns_used":2,"total_tokens":18446744073709551615}}');
    expect(lines[2]).toBe('{"seq":2,"event":{"kind":"llm_completed","turn":2,"message":{"content":"nul:\\u0000:end"}}}');
    expect((await cli(['events', 'cli-1', '--from-seq', '2', '--bare'])).stdout).toBe(
      '{"kind":"llm_completed","turn":2,"message":{"content":"nul:\\u0000:end"}}\n',
    );
  });

  it('exits 1 and names file and line when an import is rejected', async () => {
    const dir = tempDir();
    const file = writeSessionFile(dir, 'cli-bad', [sessionLine(0, sampleEvent(0)), sessionLine(1, { turn: 1, entry_count: 1 })]);
    const run = await cli(['import', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`${file}:2: session "cli-bad", seq 1: field "kind": required field is missing`);
    expect(run.stderr).toMatch(/1 of 1 input rejected/);
  });

  it('appends a JSON array or JSONL from stdin, checking --expected-seq', async () => {
    const array = JSON.stringify([sampleEvent(0), sampleEvent(1)]);
    expect(await cli(['append', 'cli-append'], array)).toMatchObject({ code: 0, stdout: 'appended 2 events to "cli-append" as seqs 0..1\n' });
    const jsonl = `${JSON.stringify(sampleEvent(2))}\n${JSON.stringify(sampleEvent(3))}\n`;
    expect(await cli(['append', 'cli-append', '-', '--expected-seq', '1'], jsonl)).toMatchObject({ code: 0, stdout: 'appended 2 events to "cli-append" as seqs 2..3\n' });

    const stale = await cli(['append', 'cli-append', '--expected-seq', '1'], jsonl);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toMatch(/expected its log to end at seq 1, but it ends at seq 3/);

    const invalid = await cli(['append', 'cli-append'], `${JSON.stringify(sampleEvent(4))}\n{"turn":1}\n`);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/<stdin>:2: session "cli-append", seq 5: field "kind": required field is missing; nothing was appended/);
    expect((await cli(['events', 'cli-append'])).stdout.trimEnd().split('\n')).toHaveLength(4);
  });

  it('exits 1 for a session with no events', async () => {
    const run = await cli(['events', 'nobody']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/no events stored for session "nobody"/);
  });

  it("prints a session's snapshot as the spec's JSON, now and as it was at a seq", async () => {
    const fixtures = fileURLToPath(new URL('../fixtures/os-snapshot/', import.meta.url));
    const events = readFileSync(path.join(fixtures, 'events_spawn_lifecycle.json'), 'utf8');
    expect((await cli(['append', 'spawn-lifecycle'], events)).code).toBe(0);
    expect((await cli(['snapshot', 'spawn-lifecycle'])).stderr).toMatch(/no os_snapshot snapshot of session "spawn-lifecycle".*not projected yet/);
    expect((await cli(['project', '--once'])).stdout).toMatch(/^os_snapshot: projected \d+ events in \d+ batch(es)? /m);

    const expected = readFileSync(path.join(fixtures, 'os_snapshot_spawn_lifecycle.json'), 'utf8');
    expect(await cli(['snapshot', 'spawn-lifecycle'])).toMatchObject({ code: 0, stdout: `${expected.trimEnd()}\n` });
    const atSeq2 = JSON.parse((await cli(['snapshot', 'spawn-lifecycle', '--at-seq', '2'])).stdout);
    expect(atSeq2).toMatchObject({ last_suspend: { turn: 3, reason: 'sub_agent_await' }, last_resumed_turn: null, process_by_agent: [{ state: 'running' }] });
    expect((await cli(['snapshot', 'spawn-lifecycle', '--at-seq', '9'])).stderr).toMatch(/ends at seq 4; there is no seq 9/);
    expect(await cli(['verify', 'spawn-lifecycle'])).toMatchObject({ code: 0, stdout: expect.stringContaining('os_snapshot: verified 1 session: 0 differ from their log\n') });
    expect((await cli(['verify'])).code).toBe(2);
  });

  it('says that the snapshot of a session stopped at its first event is the empty one, naming no seq before it', async () => {
    expect((await cli(['append', 'stopped-at-0'], '[{"kind":"suspended","turn":"3","reason":"ask_user"}]')).code).toBe(0);
    const run = await cli(['snapshot', 'stopped-at-0', '--at-seq', '0']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/session "stopped-at-0" stops at seq 0 \(.*\): no event before it is folded, so its snapshot is the empty one/);
    expect(run.stderr).not.toMatch(/--at-seq/);
  });

  it('prints the snapshot before the stop of a stopped session, says on stderr where and why it stopped, and exits 3', async () => {
    const events = [
      '{"kind":"tool_gated","turn":1,"call_id":"c1","tool":"shell","reason":"ask_user"}',
      '{"kind":"suspended","turn":"three","reason":"ask_user"}',
    ];
    expect((await cli(['append', 'stopped-at-1'], `[${events.join(',')}]`)).code).toBe(0);
    expect((await cli(['project', '--once', '--metrics-port', 'off'])).code).toBe(0);
    for (const projection of ['os_snapshot', 'os_snapshot_v0_2_60']) {
      const run = await cli(['snapshot', 'stopped-at-1', '--projection', projection]);
      expect(run.code).toBe(3);
      // stdout stays the snapshot alone, for a program that parses it.
      expect(JSON.parse(run.stdout)).toMatchObject({ tool_gated_count: 1 });
      expect(run.stderr).toMatch(new RegExp(`^os-audit: session "stopped-at-1" is stopped at seq 1 by projection ${projection}: .*turn.*\n$`));
    }
    expect((await cli(['snapshot', 'spawn-lifecycle'])).code).toBe(0);
  });

  it('runs as a program: exit codes and output through a real process', async () => {
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const run = (args: string[]) =>
      promisify(execFile)(process.execPath, ['--import', 'tsx', path.join(root, 'src/cli/main.ts'), ...args], {
        cwd: root,
        env: { ...process.env, DATABASE_URL: testDb.url },
      });
    const { stdout } = await run(['events', 'cli-1', '--bare']);
    expect(stdout.split('\n')[1]).toContain('18446744073709551615');
    await expect(run(['events', 'nobody'])).rejects.toMatchObject({ code: 1 });
    await expect(run(['no-such-command'])).rejects.toMatchObject({ code: 2 });
  });
});
