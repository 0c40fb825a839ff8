import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { builtInProjections } from '../../projections/index.js';
import { readSqlOsSnapshot } from '../../src/deprecated-os-snapshot.js';
import { Projector } from '../../src/projector/projector.js';
import { acquireLeaseSql } from '../../src/projector/sql/lease-sql.js';
import { EventStore } from '../../src/store/event-store.js';
import { osSnapshotProjector } from '../support/projector-harness.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase({ perTest: true });

/** Three sessions of readable events and one that stops at its second event (a `suspended` whose turn is a string). */
async function appendLog(store: EventStore): Promise<void> {
  for (const sessionId of ['a', 'b', 'c']) {
    await store.append(sessionId, [
      { kind: 'page_in', turn: 1, entry_count: 1 },
      { kind: 'tool_gated', turn: 2, call_id: 'c1', tool: 'shell', reason: 'ask_user' },
      { kind: 'page_out', turn: 3, message_count: 2 },
    ]);
  }
  await store.append('stops', [{ kind: 'page_in', turn: 1, entry_count: 1 }]);
  await store.append('stops', [{ kind: 'suspended', turn: 'three', reason: 'ask_user' }]);
}

/** A daemon of every built-in projection under `owner`, once it holds both leases. */
async function startDaemons(owner: string): Promise<{ stop: () => Promise<void> }> {
  const abort = new AbortController();
  const leading = builtInProjections.map((projection) => {
    let led!: () => void;
    const leader = new Promise<void>((resolve) => (led = resolve));
    const daemon = new Projector(testDb.db, projection, { owner, pollIntervalMs: 50, leaseTtlMs: 2000, onEvent: (event) => event.type === 'leader' && led() });
    return { leader, running: daemon.run(abort.signal) };
  });
  await Promise.all(leading.map(({ leader }) => leader));
  return {
    stop: async () => {
      abort.abort();
      await Promise.all(leading.map(({ running }) => running));
    },
  };
}

describe('a catch-up while another projector holds the lease', () => {
  it('ends once the holder has folded every session as far as its log had reached, folding nothing itself; a session the holder stopped is not waited on', async () => {
    const daemons = await startDaemons('the-daemon');
    try {
      await appendLog(new EventStore(testDb.db));
      const report = await osSnapshotProjector(testDb.db, { owner: 'a-catch-up' }).catchUp();
      expect(report).toMatchObject({ eventsApplied: 0, batches: 0, foldedByLeaseHolder: 'the-daemon' });
      for (const sessionId of ['a', 'b', 'c']) expect(await readSqlOsSnapshot(testDb.db, sessionId)).toMatchObject({ lastSeq: 2, stopped: null });
      expect(await readSqlOsSnapshot(testDb.db, 'stops')).toMatchObject({ lastSeq: 0, stopped: { seq: 1, reason: 'unreadable' } });
    } finally {
      await daemons.stop();
    }
  });

  it('waits while a holder folds nothing, and folds the log itself once that lease has expired', async () => {
    await appendLog(new EventStore(testDb.db));
    await acquireLeaseSql('os_snapshot', 'a-stuck-holder', 1500).execute(testDb.db);
    const waits: string[] = [];
    const report = await osSnapshotProjector(testDb.db, { owner: 'a-catch-up', onEvent: (event) => event.type === 'waiting' && waits.push(event.reason) }).catchUp();
    expect(waits).toContain('another projector holds the lease: waiting for it to fold 4 sessions');
    expect(report).toMatchObject({ eventsApplied: 10, stopped: 1 });
    expect(report.foldedByLeaseHolder).toBeUndefined();
    const { rows } = await sql<{ owner: string }>`SELECT owner FROM projection_leases WHERE projection = 'os_snapshot'`.execute(testDb.db);
    expect(rows).toEqual([{ owner: 'a-catch-up' }]);
  });

  it('project --once exits 0 beside a running daemon, saying who folded the log', async () => {
    const daemons = await startDaemons('the-daemon');
    try {
      await appendLog(new EventStore(testDb.db));
      const once = await runCliInProcess(['project', '--once'], { env: { DATABASE_URL: testDb.url } });
      expect(once).toMatchObject({ code: 0 });
      for (const projection of builtInProjections) {
        expect(once.stdout).toContain(`${projection.name}: projected 0 events in 0 batches; the rest was folded by the-daemon, which holds the lease\n`);
      }
    } finally {
      await daemons.stop();
    }
  });
});
