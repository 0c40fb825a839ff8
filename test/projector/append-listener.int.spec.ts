import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { AppendListener } from '../../src/projector/append-listener.js';
import { pollUntil } from '../support/daemon-process.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();

/** The backends of this database's append listeners. */
async function listenerPids(): Promise<number[]> {
  const { rows } = await sql<{ pid: number }>`
    SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'os-audit-listener' ORDER BY pid`.execute(testDb.db);
  return rows.map((row) => row.pid);
}

describe('the append listener', () => {
  it('keeps at most one connection while its connections are killed as they come, and leaves none once closed', { timeout: 60_000 }, async () => {
    const listener = new AppendListener(testDb.url);
    listener.start();
    // Killed in every state: connecting, listening, reconnecting.
    const until = performance.now() + 4000;
    while (performance.now() < until) {
      await sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE datname = current_database() AND application_name = 'os-audit-listener'`.execute(testDb.db);
    }
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect((await listenerPids()).length).toBeLessThanOrEqual(1);
    await listener.close();
    await pollUntil('no listener connection left', async () => (await listenerPids()).length === 0, { timeoutMs: 10_000 });
  });

  it('keeps one connection through repeated kills, and leaves none once closed', { timeout: 60_000 }, async () => {
    const listener = new AppendListener(testDb.url);
    listener.start();
    for (let kill = 0; kill < 5; kill++) {
      const [pid] = await pollUntil('the listener to connect', async () => {
        const pids = await listenerPids();
        return pids.length > 0 && pids;
      });
      await sql`SELECT pg_terminate_backend(${pid}::int)`.execute(testDb.db);
      await pollUntil('the killed connection to go', async () => !(await listenerPids()).includes(pid!));
    }
    // Reconnected once after each kill, never twice: one connection.
    const pids = await pollUntil('the listener to reconnect', async () => {
      const found = await listenerPids();
      return found.length > 0 && found;
    });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await listenerPids()).toHaveLength(1);
    expect(pids).toHaveLength(1);
    await listener.close();
    await pollUntil('no listener connection left', async () => (await listenerPids()).length === 0, { timeoutMs: 10_000 });
  });
});
