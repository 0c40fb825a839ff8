import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readPublicKey } from '../../src/integrity/digest.js';
import { verifyDigests } from '../../src/integrity/verify-digest.js';
import { encodeEventText } from '../../src/events/encode-event.js';
import { EventStore } from '../../src/store/event-store.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { useDaemonProcesses } from '../support/use-daemon-processes.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();
const startDaemon = useDaemonProcesses();
const folder = mkdtempSync(join(tmpdir(), 'os-audit-daemon-digests-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('the daemon writing digests', () => {
  it('writes signed digests while it leads, chained, that verify against the log; a standby writes none', async () => {
    const key = join(folder, 'key');
    expect(await runCliInProcess(['digest', '--new-key', key])).toMatchObject({ code: 0 });
    await new EventStore(testDb.db).appendEncoded('daemon-digest', [encodeEventText('{"kind":"page_in","turn":1,"entry_count":2}', {})]);
    const digests = join(folder, 'digests');
    const args = ['--projection', 'os_snapshot', '--digest-dir', digests, '--digest-every', '1000', '--digest-key', key];
    const leader = startDaemon(testDb.url, { owner: 'digests-a', args });
    await leader.waitForLog('leader', 30_000);
    const standby = startDaemon(testDb.url, { owner: 'digests-b', args });
    await leader.waitForLog('digest', 30_000);
    await new EventStore(testDb.db).appendEncoded('daemon-digest', [encodeEventText('{"kind":"page_in","turn":2,"entry_count":2}', {})]);
    await expect.poll(() => readdirSync(digests).filter((name) => name.endsWith('.json')).length, { timeout: 30_000, interval: 200 }).toBeGreaterThanOrEqual(3);
    // The standby first: stopped after the leader, it would take the lease over and rightly write a digest.
    await standby.stop('SIGTERM');
    await leader.stop('SIGTERM');
    expect(standby.logs.filter((record) => record.event === 'digest')).toEqual([]);
    const checks = await verifyDigests(testDb.db, digests, { publicKey: readPublicKey(readFileSync(`${key}.pub`, 'utf8'), `${key}.pub`), isFolder: true });
    expect(checks.length).toBeGreaterThanOrEqual(3);
    for (const check of checks) expect(check).toMatchObject({ signature: 'valid', fileProblems: [], sessions: [] });
    expect(checks.at(-1)!.digest!.body.events).toBe(2);
  });
});
