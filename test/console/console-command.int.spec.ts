import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { builtInProjections } from '../../projections/index.js';
import { createConsoleRoutes } from '../../src/console/console-routes.js';
import { openDatabase } from '../../src/db/open-database.js';
import { SECURITY_HEADERS } from '../../src/observability/http-access.js';
import { startObservabilityServer } from '../../src/observability/observability-server.js';
import { startCli } from '../support/cli-process.js';
import { pollUntil, startDaemon } from '../support/daemon-process.js';
import { basicAuth, httpGet } from '../support/http-get.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { createTestDatabase, useTestDatabase } from '../support/test-database.js';

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

/** A file holding `token`, for `--auth-token-file`. */
function tokenFile(token: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'os-audit-token-')), 'token');
  writeFileSync(file, token);
  return file;
}

/** The security headers as node:http reads them (names in lower case). */
const securityHeaders = Object.fromEntries(Object.entries(SECURITY_HEADERS).map(([name, value]) => [name.toLowerCase(), value]));

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

  it("on a database without os-audit's schema, says to migrate: 503 on every page and API route", async () => {
    const empty = await createTestDatabase({ migrate: false });
    const server = await startObservabilityServer('127.0.0.1', 0, createConsoleRoutes({ db: empty.db, projections: builtInProjections }));
    try {
      for (const path of ['/', '/sessions', '/sessions/s1']) {
        const response = await fetch(`${server.url}${path}`);
        expect([path, response.status]).toEqual([path, 503]);
        expect(await response.text()).toMatch(/<p class="notice" id="error">this database has no os-audit schema, or an older one than this console \(.*\): run `os-audit migrate`<\/p>/);
      }
      for (const path of ['/api/projections', '/api/sessions', '/api/live']) {
        const response = await fetch(`${server.url}${path}`);
        expect([path, response.status]).toEqual([path, 503]);
        expect(((await response.json()) as { error: string }).error).toMatch(/: run `os-audit migrate`$/);
      }
    } finally {
      await server.close();
      await empty.drop();
    }
  });

  it('the daemon serves the console next to /metrics, on the same port, with its Host check, token and headers on every route', async () => {
    const token = 'daemon-token';
    const daemon = startDaemon(testDb.url, { owner: 'console-daemon', args: ['--allowed-host', 'audit.example.com'], env: { OS_AUDIT_AUTH_TOKEN: token } });
    const url = await daemon.metricsUrl();
    expect(daemon.logs.find((record) => record.event === 'listening')?.msg).toBe(`serving the web console on ${url}/ and /metrics, /healthz and /readyz`);
    // The port is served before the lease is taken: the page names the leader once it leads.
    await pollUntil('the daemon to lead every projection', async () => daemon.logs.filter((record) => record.event === 'leader').length >= 2, { timeoutMs: 20_000, intervalMs: 50 });
    const bearer = { Authorization: `Bearer ${token}` };
    expect((await httpGet(`${url}/`, bearer)).body).toContain('<td>console-daemon <span class="ok">live</span></td>');
    const routes = { '/': 200, '/sessions/no-such-session': 404, '/api/live': 200, '/assets/console.css': 200, '/no-such-path': 404, '/metrics': 200, '/healthz': 200, '/readyz': 200 };
    for (const [path, status] of Object.entries(routes)) {
      const answer = await httpGet(`${url}${path}`, { ...bearer, Host: 'audit.example.com' });
      expect([path, answer.status]).toEqual([path, status]);
      expect(answer.headers).toMatchObject(securityHeaders);
      // Probes answer any Host (a kubelet sends the pod's IP); every other route refuses one not allowed.
      const elsewhere = await httpGet(`${url}${path}`, { ...bearer, Host: 'evil.example.com' });
      expect([path, elsewhere.status, elsewhere.headers]).toMatchObject([path, path.endsWith('z') ? status : 421, securityHeaders]);
      // Probes and metrics without the token; the console, its JSON and assets, and its 404s ask for it.
      const tokenless = await httpGet(`${url}${path}`);
      expect([path, tokenless.status, tokenless.headers]).toMatchObject([path, ['/metrics', '/healthz', '/readyz'].includes(path) ? status : 401, securityHeaders]);
    }
    expect(await daemon.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  });

  it('refuses to listen beyond loopback without a token, in one line saying how to allow it, before anything is migrated', async () => {
    const refusal = 'os-audit: refusing to serve the console on 0.0.0.0 without a token: give one (--auth-token-file FILE or OS_AUDIT_AUTH_TOKEN), or pass --insecure-no-auth to serve it to anyone\n';
    // A database that does not exist: a command that reached it would fail otherwise.
    const gone = new URL(testDb.url);
    gone.pathname = '/os_audit_no_such_database';
    const env = { DATABASE_URL: gone.toString() };
    for (const [args, runEnv] of [
      [['console', '--metrics-host', '0.0.0.0'], env],
      [['console'], { ...env, OS_AUDIT_METRICS_HOST: '0.0.0.0' }],
      [['project', '--metrics-host', '0.0.0.0'], env],
      [['up', '--import', samples, '--metrics-host', '0.0.0.0', '--metrics-port', '0'], env],
    ] as const) {
      expect([args, await runCliInProcess(args, { env: runEnv })]).toEqual([args, { code: 2, stdout: '', stderr: refusal }]);
    }
    const empty = await runCliInProcess(['console', '--metrics-host', '0.0.0.0', '--auth-token-file', tokenFile('\n')], { env });
    expect(`${empty.code},${empty.stderr}`).toMatch(/^2,os-audit: the token file \S+ is empty: write the token into it\n$/);
    const missing = await runCliInProcess(['console', '--auth-token-file', '/no/such/token'], { env });
    expect([missing.code, missing.stderr]).toEqual([1, 'os-audit: cannot read /no/such/token: no such file or directory\n']);
  });

  it('os-audit console on 0.0.0.0 with a token: asks for it on every page and answers only the Host names allowed', async () => {
    const token = 'console-token-0123456789';
    let stderr = '';
    const run = startCli(['console', '--metrics-port', '0', '--metrics-host', '0.0.0.0', '--auth-token-file', tokenFile(`${token}\n`), '--allowed-host', 'audit.example.com'], {
      databaseUrl: testDb.url,
    });
    run.child.stderr!.on('data', (chunk: string) => (stderr += chunk));
    const port = new URL(await consoleUrl(() => stderr)).port;
    const url = `http://127.0.0.1:${port}`;
    for (const path of ['/', '/sessions', '/api/live', '/assets/console.css']) {
      expect([path, (await httpGet(`${url}${path}`)).status]).toEqual([path, 401]);
      expect([path, (await httpGet(`${url}${path}`, { Authorization: 'Bearer wrong' })).status]).toEqual([path, 401]);
      expect([path, (await httpGet(`${url}${path}`, { Authorization: `Bearer ${token}` })).status]).toEqual([path, 200]);
      expect([path, (await httpGet(`${url}${path}`, { Authorization: basicAuth('anyone', token), Host: `audit.example.com:${port}` })).status]).toEqual([path, 200]);
      expect([path, (await httpGet(`${url}${path}`, { Authorization: `Bearer ${token}`, Host: 'evil.example.com' })).status]).toEqual([path, 421]);
    }
    run.child.kill('SIGTERM');
    expect(await run.result).toMatchObject({ code: 0, signal: null });

    // --insecure-no-auth: the operator means it.
    stderr = '';
    const open = startCli(['console', '--metrics-port', '0', '--metrics-host', '0.0.0.0', '--insecure-no-auth'], { databaseUrl: testDb.url });
    open.child.stderr!.on('data', (chunk: string) => (stderr += chunk));
    expect((await httpGet(`http://127.0.0.1:${new URL(await consoleUrl(() => stderr)).port}/api/live`)).status).toBe(200);
    open.child.kill('SIGTERM');
    expect(await open.result).toMatchObject({ code: 0, signal: null });
  });
});
