import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { builtInProjections } from '../../projections/index.js';
import { createConsoleRoutes } from '../../src/console/console-routes.js';
import { openDatabase } from '../../src/db/open-database.js';
import { startObservabilityServer } from '../../src/observability/observability-server.js';
import { startCli } from '../support/cli-process.js';
import { pollUntil, startDaemon } from '../support/daemon-process.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();
const samples = fileURLToPath(new URL('../../samples', import.meta.url));

/** Resolves with the URL `os-audit console` says it serves, from its stderr. */
async function consoleUrl(stderr: () => string, timeoutMs = 30_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = /^os-audit console on (http:\/\/\S+)\/ \(Ctrl-C stops it\)$/m.exec(stderr());
    if (match) return match[1]!;
    if (Date.now() > deadline) throw new Error(`os-audit console did not say where it listens; stderr:\n${stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('os-audit console and the daemon serve the web console', () => {
  it('os-audit console alone: the pages, their JSON and the assets on the port it was given, and a clean stop', async () => {
    expect((await runCliInProcess(['import', samples], { env: { DATABASE_URL: testDb.url } })).code).toBe(0);
    let stderr = '';
    const run = startCli(['console', '--metrics-port', '0'], { databaseUrl: testDb.url });
    run.child.stderr!.on('data', (chunk: string) => (stderr += chunk));
    const url = await consoleUrl(() => stderr);
    const sessions = await fetch(`${url}/sessions?q=sample-00000`);
    expect([sessions.status, sessions.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
    expect(await sessions.text()).toContain('<a href="/sessions/sample-000000">sample-000000</a>');
    const api = (await (await fetch(`${url}/api/sessions/sample-000000`)).json()) as { events: number; timeline: unknown[] };
    expect(api.events).toBe(api.timeline.length);
    for (const [asset, type] of [['console.js', 'text/javascript'], ['console.css', 'text/css']]) {
      const response = await fetch(`${url}/assets/${asset}`);
      expect([response.status, response.headers.get('content-type')]).toEqual([200, `${type}; charset=utf-8`]);
    }
    expect((await fetch(`${url}/assets/../package.json`)).status).toBe(404);
    // No projector runs: the projections page shows the snapshot not projected yet.
    expect(await (await fetch(`${url}/`)).text()).toContain('data-live="lag:os_snapshot">');
    run.child.kill('SIGTERM');
    expect(await run.result).toMatchObject({ code: 0, signal: null });
  });

  it('refuses a port in use, or an invalid OS_AUDIT_METRICS_PORT, in one line', async () => {
    const busy = await startObservabilityServer('127.0.0.1', 0, {});
    try {
      const clash = await runCliInProcess(['console', '--metrics-port', String(busy.port)], { env: { DATABASE_URL: testDb.url } });
      expect(clash.code).toBe(1);
      expect(clash.stderr).toMatch(new RegExp(`^os-audit: cannot serve the console on 127\\.0\\.0\\.1:${busy.port}: .*EADDRINUSE.* \\(set --metrics-port or OS_AUDIT_METRICS_PORT to another port, 0 for any free one; or --metrics-host or OS_AUDIT_METRICS_HOST to another address\\)\\n$`));
    } finally {
      await busy.close();
    }
    const off = await runCliInProcess(['console'], { env: { DATABASE_URL: testDb.url, OS_AUDIT_METRICS_PORT: 'off' } });
    expect([off.code, off.stderr]).toEqual([2, 'os-audit: invalid OS_AUDIT_METRICS_PORT="off": expected a port from 0 to 65535 (the console cannot be off)\n']);
    const flag = await runCliInProcess(['console', '--metrics-port', '70000'], { env: { DATABASE_URL: testDb.url } });
    expect([flag.code, flag.stderr.split('\n')[0]]).toEqual([2, "error: option '--metrics-port <port>' argument '70000' is invalid. expected a port from 0 to 65535 (the console cannot be off)"]);
  });

  it('answers a page it cannot read the database for with one line saying so, not a stack trace', async () => {
    const gone = new URL(testDb.url);
    gone.pathname = '/os_audit_no_such_database';
    const db = openDatabase({ connectionString: gone.toString() });
    const server = await startObservabilityServer('127.0.0.1', 0, createConsoleRoutes({ db, projections: builtInProjections }));
    try {
      const response = await fetch(`${server.url}/sessions`);
      expect([response.status, response.headers.get('content-type')]).toEqual([500, 'text/html; charset=utf-8']);
      expect(await response.text()).toContain('<p class="notice" id="error">cannot read the database: database &quot;os_audit_no_such_database&quot; does not exist</p>');
    } finally {
      await server.close();
      await db.destroy();
    }
  });

  it('the daemon serves the console next to /metrics, on the same port', async () => {
    const daemon = startDaemon(testDb.url, { owner: 'console-daemon' });
    const url = await daemon.metricsUrl();
    expect(daemon.logs.find((record) => record.event === 'listening')?.msg).toBe(`serving the web console on ${url}/ and /metrics, /healthz and /readyz`);
    // The port is served before the lease is taken: the page names the leader once it leads.
    await pollUntil('the daemon to lead every projection', async () => daemon.logs.filter((record) => record.event === 'leader').length >= 2, { timeoutMs: 20_000, intervalMs: 50 });
    const projections = await (await fetch(`${url}/`)).text();
    expect(projections).toContain('<td>console-daemon <span class="ok">live</span></td>');
    expect((await fetch(`${url}/metrics`)).status).toBe(200);
    expect((await fetch(`${url}/api/live`)).status).toBe(200);
    expect(await daemon.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  });
});
