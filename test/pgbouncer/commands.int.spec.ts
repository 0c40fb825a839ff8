import { cpSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it } from 'vitest';
import { migrateToLatest, openDatabase, PostgresKernelJournal, PostgresSessionLog } from '../../src/index.js';
import { EventStore } from '../../src/store/event-store.js';
import { sampleEvent, sessionLine, useTempDir, writeSessionFile } from '../support/log-files.js';
import { pgbouncerTestsRun, usePgBouncer } from '../support/pgbouncer.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { createTestDatabase } from '../support/test-database.js';

/**
 * Every command and the library through PgBouncer in transaction pooling mode (each
 * transaction on whichever server connection is free), as docs/deploy.md's "Behind a connection
 * pooler" says they work: the projection equals the in-memory fold of every log at the end.
 * Two server connections for many clients, so that clients share them and what one client's
 * session leaves on a connection (a prepared statement, a lock) meets the others.
 */
const fixture = fileURLToPath(new URL('../fixtures/sdk-v0.2.60-log', import.meta.url));
const bouncer = usePgBouncer(() => inject('postgresAdminUrl'));
const tempDir = useTempDir();

describe.runIf(pgbouncerTestsRun)('every command through PgBouncer (transaction pooling)', () => {
  it('migrates, imports, appends, projects, verifies, rebuilds, and reads back, all through the pooler', async () => {
    const scratch = await createTestDatabase({ migrate: false });
    const url = bouncer.through(scratch.url);
    const cli = (args: string[], stdin?: string) => runCliInProcess(args, { env: { DATABASE_URL: url }, stdin });
    const ok = async (args: string[], stdin?: string) => {
      const run = await cli(args, stdin);
      // The projector logs on stderr: info lines only (waiting for another test's transaction, say).
      expect(run.code, `os-audit ${args.join(' ')}: ${run.stderr}`).toBe(0);
      expect(run.stderr.split('\n').filter((line) => line !== '' && !line.includes('"level":"info"'))).toEqual([]);
      return run.stdout;
    };
    try {
      // Concurrent migrations serialize on their lock; then nothing is left to apply.
      const applied = await Promise.all([cli(['migrate']), cli(['migrate']), cli(['migrate'])]);
      expect(applied.map((run) => `${run.code} ${run.stderr}`)).toEqual(['0 ', '0 ', '0 ']);
      expect(applied.filter((run) => run.stdout.startsWith('applied ')).length).toBe(1);
      expect(await ok(['migrate'])).toBe('schema is up to date; nothing to apply\n');

      const logs = path.join(tempDir(), 'logs');
      cpSync(fixture, logs, { recursive: true });
      expect(await ok(['import', logs])).toMatch(/^imported \d+ new events/);
      // Large enough for COPY.
      const big = tempDir();
      writeSessionFile(big, 'big', Array.from({ length: 3000 }, (_, seq) => sessionLine(seq, sampleEvent(seq))));
      expect(await ok(['import', big])).toMatch(/^imported 3000 new events/);
      await ok(['append', 'appended', '--expected-seq', '-1'], `${JSON.stringify([sampleEvent(0), sampleEvent(1)])}`);
      expect((await ok(['events', 'appended'])).trimEnd().split('\n')).toHaveLength(2);

      // Each --once opens new client connections that meet the server connections of the one before.
      expect(await ok(['project', '--once', '--batch-size', '500'])).toMatch(/^os_snapshot: projected \d+ events/m);
      await ok(['append', 'appended'], JSON.stringify([sampleEvent(2), sampleEvent(3)]));
      expect(await ok(['project', '--once', '--batch-size', '1'])).toMatch(/^os_snapshot: projected 2 events in 2 batches/m);
      await ok(['append', 'appended'], JSON.stringify([sampleEvent(4)]));
      expect(await ok(['project', '--once'])).toMatch(/^os_snapshot: projected 1 event in 1 batch/m);
      expect(await ok(['status'])).toMatch(/behind: +0 events/);
      expect(await ok(['snapshot', 'appended'])).toContain('"process_by_agent"');
      expect(await ok(['verify', '--all'])).toMatch(/^os_snapshot: verified \d+ sessions: 0 differ from their log$/m);
      expect(await ok(['rebuild'])).toMatch(/^rebuilt os_snapshot \(version 1\) from \d+ events/m);
      expect(await ok(['verify', '--all'])).toMatch(/^os_snapshot: verified \d+ sessions: 0 differ from their log$/m);
    } finally {
      await scratch.drop();
    }
  });

  it('runs the library through the pooler: EventStore, PostgresSessionLog and PostgresKernelJournal', async () => {
    const scratch = await createTestDatabase({ migrate: false });
    const db = openDatabase({ connectionString: bouncer.through(scratch.url), maxConnections: 4 });
    try {
      expect(await migrateToLatest(db)).not.toEqual([]);
      const store = new EventStore(db);
      await store.append('store', [sampleEvent(0), sampleEvent(1)]);
      await store.append('store', Array.from({ length: 2000 }, (_, i) => sampleEvent(i + 2)), { expectedSeq: 1 });
      let read = 0;
      for await (const stored of store.readSession('store', { pageSize: 500 })) expect(stored.seq).toBe(read++);
      expect(read).toBe(2002);

      const log = new PostgresSessionLog(db);
      expect(await log.append('log', { kind: 'page_in', turn: 1, entry_count: 1 })).toBe(0);
      expect(await log.latestSeq('log')).toBe(0);

      const journal = new PostgresKernelJournal(db);
      await journal.compareAndAppend('op-1', undefined, { step_seq: 0, record_digest: 'd0', record_bytes: new Uint8Array([1]) });
      await journal.compareAndAppend('op-1', 'd0', { step_seq: 1, record_digest: 'd1', record_bytes: new Uint8Array([2]) });
      expect(await journal.head('op-1')).toEqual({ step_seq: 1, record_digest: 'd1' });
    } finally {
      await db.destroy();
      await scratch.drop();
    }
  });
});
