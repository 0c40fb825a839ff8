import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { builtInProjections } from '../../projections/index.js';
import { connectionUrlAs, dropLoginUser } from '../deploy/login-user.js';
import { citusTestsRun, useCitusDatabase } from '../support/citus-database.js';
import { writeCorpusStream } from '../support/corpus-stream.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';

const folder = mkdtempSync(path.join(tmpdir(), 'os-audit-citus-cli-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe.runIf(citusTestsRun)('the CLI on Citus', () => {
  const testDb = useCitusDatabase({ migrate: false });
  const cli = (...args: string[]) => runCliInProcess(args, { env: { DATABASE_URL: testDb.url } });

  it('runs every command as on one server: migrate, import, append, events, project, snapshot (--at-seq), verify, rebuild, status', async () => {
    expect((await cli('migrate')).stdout).toContain('applied 0001-event-store');

    const stream = path.join(folder, 'corpus.jsonl');
    const corpus = await writeCorpusStream(stream, { seed: 'citus cli', prefix: 'cli', events: 3000, projections: builtInProjections });
    expect((await cli('import', stream)).stdout).toContain(`imported ${corpus.events} new events`);
    const appended = path.join(folder, 'appended.jsonl');
    writeFileSync(appended, `${JSON.stringify({ kind: 'suspended', turn: 9, reason: 'waiting for a human', pending_calls: ['call-1'] })}\n`);
    const [sessionId] = [...corpus.folds.get('os_snapshot')!.keys()].sort();
    const append = await cli('append', sessionId!, appended);
    expect(append.code, append.stderr).toBe(0);
    const lastSeq = Number(/seqs? (\d+)/.exec(append.stdout)![1]);

    const events = (await cli('events', sessionId!)).stdout.trim().split('\n');
    expect(events).toHaveLength(lastSeq + 1);
    expect(JSON.parse(events.at(-1)!).event.kind).toBe('suspended');

    const status = await cli('status', '--json');
    const before = JSON.parse(status.stdout) as { projection: string; behind: { events: number } }[];
    for (const projection of before) expect(projection.behind.events).toBe(corpus.events + 1);

    const projected = await cli('project', '--once');
    expect(projected.code, projected.stderr).toBe(0);
    expect(projected.stdout).toContain(`os_snapshot: projected ${corpus.events + 1} events`);

    const snapshot = JSON.parse((await cli('snapshot', sessionId!)).stdout);
    expect(snapshot.last_suspend).toEqual({ turn: 9, reason: 'waiting for a human', pending_calls: ['call-1'] });
    expect(JSON.parse((await cli('snapshot', sessionId!, '--at-seq', String(lastSeq - 1))).stdout)).toEqual(corpus.folds.get('os_snapshot')!.get(sessionId!));

    const verified = await cli('verify', '--all');
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    expect(verified.stdout).toContain(`os_snapshot: verified ${corpus.sessions} sessions: 0 differ from their log`);

    const rebuilt = await cli('rebuild', '--projection', 'os_snapshot');
    expect(rebuilt.stdout).toContain(`rebuilt os_snapshot (version 1) from ${corpus.events + 1} events`);
    expect((await cli('verify', '--all', '--projection', 'os_snapshot')).code).toBe(0);

    const after = JSON.parse((await cli('status', '--json')).stdout) as { projection: string; behind: { events: number }; checkpoint: { eventsApplied: number } }[];
    for (const projection of after) expect(projection.behind.events).toBe(0);
    expect(after.find((projection) => projection.projection === 'os_snapshot')!.checkpoint.eventsApplied).toBe(corpus.events + 1);
  });

  it('runs as the least-privilege roles: a writer imports and appends, the projector folds, the reader reads the views and never a payload', async () => {
    // Migrated by the test above. Roles made on the coordinator reach the workers (Citus propagates them).
    const password = randomBytes(12).toString('hex');
    const users = { writer: 'os_audit_writer', projector: 'os_audit_projector', reader: 'os_audit_reader' };
    const names = Object.fromEntries(Object.keys(users).map((user) => [user, `os_audit_citus_${user}_${randomBytes(4).toString('hex')}`]));
    for (const [user, group] of Object.entries(users)) await sql.raw(`CREATE ROLE ${names[user]} LOGIN PASSWORD '${password}' IN ROLE ${group}`).execute(testDb.db);
    const as = (user: string, ...args: string[]) => runCliInProcess(args, { env: { DATABASE_URL: connectionUrlAs(testDb.url, names[user]!, password) } });
    try {
      const stream = path.join(folder, 'by-roles.jsonl');
      const corpus = await writeCorpusStream(stream, { seed: 'citus roles', prefix: 'roles', events: 500, projections: [] });
      const imported = await as('writer', 'import', stream);
      expect(imported.code, imported.stderr).toBe(0);
      expect(imported.stdout).toContain(`imported ${corpus.events} new events`);
      const appended = path.join(folder, 'by-writer.jsonl');
      writeFileSync(appended, `${JSON.stringify({ kind: 'tool_gated', turn: 1, tool: 'shell' })}\n`);
      const append = await as('writer', 'append', 'roles-appended', appended);
      expect(append.code, append.stderr).toBe(0);

      const projected = await as('projector', 'project', '--once');
      expect(projected.code, projected.stderr).toBe(0);
      expect(projected.stdout).toContain(`os_snapshot: projected ${corpus.events + 1} events`);
      const verified = await as('projector', 'verify', '--all');
      expect(verified.code, verified.stdout + verified.stderr).toBe(0);

      const snapshot = await as('reader', 'snapshot', 'roles-appended');
      expect(snapshot.code, snapshot.stderr).toBe(0);
      expect(JSON.parse(snapshot.stdout).tool_gated_count).toBe(1);
      const payload = await as('reader', 'events', 'roles-appended');
      expect(payload.code).not.toBe(0);
      expect(payload.stderr).toMatch(/permission denied/);
    } finally {
      for (const name of Object.values(names)) await dropLoginUser(testDb.db, name!);
    }
  });
});
