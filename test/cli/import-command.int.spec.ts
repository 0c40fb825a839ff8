import { symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { copySdkLog, recordName, writeJournalFile } from '../support/journal-folder.js';
import { sampleEvent, sessionLine, useTempDir, writeSessionFile } from '../support/log-files.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();
const tempDir = useTempDir();
const cli = (args: string[], stdin?: string) => runCliInProcess(args, { env: { DATABASE_URL: testDb.url }, stdin });

describe('os-audit import', () => {
  it('says which logs had no events yet, and exits 0: in a directory and as a single file', async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'quiet.jsonl'), '\n\n');
    writeSessionFile(dir, 'busy', [sessionLine(0, sampleEvent(0))]);
    expect(await cli(['import', dir])).toEqual({
      code: 0,
      stdout: 'imported 1 new event; 0 were already stored (1 session from 2 files)\n1 empty log (no events yet): quiet\n',
      stderr: '',
    });
    expect(await cli(['import', path.join(dir, 'quiet.jsonl')])).toEqual({
      code: 0,
      stdout: 'imported 0 new events; 0 were already stored (0 sessions from 1 file)\n1 empty log (no events yet): quiet\n',
      stderr: '',
    });
  });

  it('names the first ten empty logs and counts the rest', async () => {
    const dir = tempDir();
    for (let i = 0; i < 12; i++) writeFileSync(path.join(dir, `e${String(i).padStart(2, '0')}.jsonl`), '');
    expect((await cli(['import', dir])).stdout).toContain('12 empty logs (no events yet): e00, e01, e02, e03, e04, e05, e06, e07, e08, e09 and 2 more\n');
  });

  it('imports a session file given as a symbolic link, as the session the link is named after', async () => {
    const dir = tempDir();
    const link = path.join(dir, 'cli-link.jsonl');
    symlinkSync(writeSessionFile(tempDir(), 'cli-target', [sessionLine(0, sampleEvent(0))]), link);
    expect(await cli(['import', link])).toMatchObject({ code: 0, stdout: 'imported 1 new event; 0 were already stored (1 session from 1 file)\n' });
    expect((await cli(['events', 'cli-link'])).stdout).toBe(`${sessionLine(0, sampleEvent(0))}\n`);
  });

  it("imports a v0.2.60 log folder's kernel journal, and says what was new and what was already stored", async () => {
    const dir = copySdkLog(tempDir());
    expect(await cli(['import', dir])).toEqual({
      code: 0,
      stdout:
        'imported 5 new events; 0 were already stored (2 sessions from 2 files)\n' +
        'kernel journal: 2 operations; 5 new records (0 already stored), 2 new checkpoints (0 already stored), ' +
        '1 new acknowledgement, 1 new pruned anchor, 1 new outbound envelope\n',
      stderr: '',
    });
    expect((await cli(['import', dir])).stdout).toBe(
      'imported 0 new events; 5 were already stored (2 sessions from 2 files)\n' +
        'kernel journal: 2 operations; 0 new records (5 already stored), 0 new checkpoints (2 already stored)\n',
    );
  });

  it('exits 1 for a journal operation whose chain does not link, naming its file, and imports the rest', async () => {
    const dir = copySdkLog(tempDir());
    const file = writeJournalFile(dir, 'op-broken', recordName(0), { step_seq: 0, record_digest: 'b-0', previous_record_digest: 'b-x', record_bytes: '' });
    const run = await cli(['import', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `os-audit: ${file}: operation "op-broken": the genesis record (step_seq 0) has a previous_record_digest\n` +
        'os-audit: 1 of 5 inputs rejected; nothing of them was stored\n',
    );
    expect(run.stdout).toMatch(/kernel journal: 3 operations; 0 new records \(5 already stored\)/);
  });

  it('explains the formats, the order of lines, empty logs and the nesting limit in --help', async () => {
    const help = (await cli(['import', '--help'])).stdout;
    expect(help).toMatch(/kernel-journal\/ folder \(deepstrike SDK v0\.2\.60\)/);
    expect(help).toMatch(/a file whose first line has a "session_id"\s+is a stream/);
    expect(help).toMatch(/any seq order/);
    expect(help).toMatch(/session with no events yet/);
    expect(help).toMatch(/may nest 512 levels/);
    expect((await cli(['append', '--help'])).stdout).toMatch(/number text\s+\(1e2, -0\.0, 18446744073709551615\)[\s\S]*may nest 512 levels/);
  });
});
