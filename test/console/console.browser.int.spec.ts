import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Kysely, sql } from 'kysely';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtInProjections } from '../../projections/index.js';
import { createConsoleRoutes } from '../../src/console/console-routes.js';
import { openDatabase } from '../../src/db/open-database.js';
import type { DB } from '../../src/db/schema.js';
import { type ObservabilityServer, startObservabilityServer } from '../../src/observability/observability-server.js';
import { EventStore } from '../../src/store/event-store.js';
import { connectionUrlAs, dropLoginUser } from '../deploy/login-user.js';
import { browserTestsRun, launchChromium } from '../support/chromium.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { sampleEvent } from '../support/sample-event.js';
import { useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();
const samples = fileURLToPath(new URL('../../samples', import.meta.url));

/** An event whose text would run as script if the console inserted it as HTML. */
const HOSTILE_TOOL = '</pre><script>window.__injected = 1</script>';
const HOSTILE_REASON = '<img src=x onerror="window.__injected = 2">';

/** The sessions of `samples/older-format/`, which os_snapshot_v0_2_60 stops. */
const OLDER_FORMAT = ['older-format-000000', 'older-format-000001', 'older-format-000002'];

/** Sessions appended one transaction each, so that each has its own last activity. */
const PAGED = Array.from({ length: 60 }, (_, i) => `paged-${String(i).padStart(3, '0')}`);

async function cli(...args: string[]): Promise<string> {
  const run = await runCliInProcess(args, { env: { DATABASE_URL: testDb.url } });
  expect(run.code, run.stderr).toBe(0);
  return run.stdout;
}

/** Session ids in the console's order (last activity first) among those `where` keeps, as plain SQL says. */
async function expectedOrder(where: string): Promise<string[]> {
  const { rows } = await sql<{ session_id: string }>`
    SELECT o.session_id FROM os_session_overview o WHERE ${sql.raw(where)} ORDER BY o.last_recorded_at DESC, o.session_id DESC`.execute(testDb.db);
  return rows.map((row) => row.session_id);
}

async function listedSessions(page: Page): Promise<string[]> {
  return page.locator('table.sessions tbody tr').evaluateAll((rows) => rows.map((row) => (row as unknown as { dataset: Record<string, string> }).dataset.session!));
}

describe.skipIf(!browserTestsRun)('the web console, in Chromium', () => {
  let browser: Browser;
  let server: ObservabilityServer;
  let page: Page;

  beforeAll(async () => {
    await cli('import', samples);
    await cli('import', path.join(samples, 'older-format'));
    const store = new EventStore(testDb.db);
    for (const sessionId of PAGED) await store.append(sessionId, [sampleEvent(0)]);
    await store.append('hostile', [{ kind: 'tool_gated', turn: 1, call_id: 'c1', tool: HOSTILE_TOOL, reason: HOSTILE_REASON }]);
    // No projection reads a turn that is not a number: each stops the session at seq 1.
    await store.append('stopped', [
      { kind: 'tool_gated', turn: 1, call_id: 'c1', tool: 'shell', reason: 'ask_user' },
      { kind: 'suspended', turn: 'three', reason: 'ask_user' },
      { kind: 'resumed', turn: 4, approved: [], denied: [] },
    ]);
    await cli('project', '--once');
    server = await startObservabilityServer('127.0.0.1', 0, createConsoleRoutes({ db: testDb.db, projections: builtInProjections }));
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('pageerror', (error) => {
      throw error;
    });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('projections: each projection with its position and lag, and its stopped sessions with the event, reason and a link that opens that event', async () => {
    await page.goto(`${server.url}/`);
    const row = page.locator('tr[data-projection="os_snapshot"]');
    await expect.poll(() => row.locator('td').first().textContent()).toBe('os_snapshot');
    // stopped sessions, events set aside, halted (no last error)
    expect((await row.locator('td').allTextContents()).slice(6)).toEqual(['1', '0', 'no']);
    expect((await page.locator('tr[data-projection="os_snapshot_v0_2_60"] td').allTextContents()).slice(6)).toEqual(['4', '0', 'no']);
    const stopped = page.locator('table[data-stopped="os_snapshot"] tbody tr');
    expect(await stopped.count()).toBe(1);
    const cells = await stopped.locator('td').allTextContents();
    expect(cells.slice(0, 4)).toEqual(['stopped', 'seq 1', 'suspended', 'unreadable']);
    expect(cells[4]).toMatch(/turn/);
    // The older-format samples are stopped by the v0.2.60 projection, and marked as such; the stop of a bad event is not.
    const v0260 = page.locator('table[data-stopped="os_snapshot_v0_2_60"] tbody tr');
    expect(await v0260.count()).toBe(4);
    expect(await page.locator('table[data-stopped="os_snapshot_v0_2_60"] tr.older-format td:first-child').allTextContents()).toEqual(OLDER_FORMAT);
    for (const note of await page.locator('table[data-stopped="os_snapshot_v0_2_60"] tr.older-format .note').allTextContents()) {
      expect(note).toBe('older runtime format: os_snapshot_v0_2_60 cannot read it');
    }
    expect(await page.locator('table[data-stopped="os_snapshot"] .note').count()).toBe(0);
    expect(await page.locator('h2', { hasText: 'os_snapshot_v0_2_60:' }).textContent()).toBe('os_snapshot_v0_2_60: 4 stopped sessions');

    await stopped.locator('a.event-link').click();
    await page.waitForURL(/\/sessions\/stopped\?from=1#event-1$/);
    const event = page.locator('#event-1');
    expect(await event.getAttribute('class')).toBe('stopped-event');
    expect(await event.locator('.event-json').textContent()).toBe('{\n  "kind": "suspended",\n  "turn": "three",\n  "reason": "ask_user"\n}');
  });

  it('a stopped session: where and why each projection stopped it, linked to the event; an older-format log says so', async () => {
    await page.goto(`${server.url}/sessions/stopped`);
    for (const projection of ['os_snapshot', 'os_snapshot_v0_2_60']) {
      const stop = page.locator(`dd[data-stop="${projection}"]`);
      expect(await stop.textContent(), projection).toMatch(/^at seq 1 \(suspended, unreadable\): .*turn/);
      expect(await stop.getAttribute('class')).toBe('bad stop');
      expect(await stop.locator('a.event-link').getAttribute('href')).toBe('/sessions/stopped?from=1#event-1');
    }
    expect(await page.locator('dt', { hasText: 'stopped by' }).allTextContents()).toEqual(['stopped by os_snapshot', 'stopped by os_snapshot_v0_2_60']);

    await page.goto(`${server.url}/sessions/${OLDER_FORMAT[0]}`);
    const stops = page.locator('dd.stop');
    expect(await stops.count()).toBe(1);
    expect(await stops.getAttribute('data-stop')).toBe('os_snapshot_v0_2_60');
    expect(await stops.textContent()).toMatch(/^at seq \d+ \(budget_exceeded, unreadable\): field "operation_id": missing or null older runtime format: os_snapshot_v0_2_60 cannot read it$/);

    await page.goto(`${server.url}/sessions/sample-000000`);
    expect(await page.locator('dd.stop').count()).toBe(0);
  });

  it('sessions: by last activity, paged by keyset across pages, searched by id, filtered by each state', async () => {
    await page.goto(`${server.url}/sessions`);
    const all = await expectedOrder('true');
    expect(all.length).toBe(PAGED.length + 14 + OLDER_FORMAT.length + 2);
    const first = await listedSessions(page);
    expect(first).toEqual(all.slice(0, 50));
    expect(first.slice(0, 3)).toEqual(['stopped', 'hostile', 'paged-059']);
    await page.locator('a[rel="next"]').click();
    await page.waitForURL(/after=/);
    expect(await listedSessions(page)).toEqual(all.slice(50));
    expect(await page.locator('a[rel="next"]').count()).toBe(0);
    await page.locator('a[rel="prev"]').click();
    await page.waitForURL(/before=/);
    expect(await listedSessions(page)).toEqual(all.slice(0, 50));
    expect([await page.locator('a[rel="prev"]').count(), await page.locator('a[rel="next"]').count()]).toEqual([0, 1]);
    await page.locator('a[rel="next"]').click();
    await page.waitForURL(/after=/);
    await page.locator('a[rel="first"]').click();
    await page.waitForURL(/\/sessions$/);
    expect(await listedSessions(page)).toEqual(all.slice(0, 50));
    // The same pages as JSON, cursor by cursor.
    const api = (await (await fetch(`${server.url}/api/sessions`)).json()) as { rows: { sessionId: string }[]; next: string; previous?: string };
    const older = (await (await fetch(`${server.url}/api/sessions?after=${api.next}`)).json()) as { rows: { sessionId: string }[]; next?: string };
    expect([...api.rows, ...older.rows].map((row) => row.sessionId)).toEqual(all);
    expect([api.previous, older.next]).toEqual([undefined, undefined]);

    await page.locator('input[name="q"]').fill('paged-00');
    await page.locator('form.search button').click();
    await page.waitForURL(/q=paged-00/);
    expect(await listedSessions(page)).toEqual(PAGED.slice(0, 10).reverse());

    const filters: Record<string, string> = {
      suspended: 'o.suspended',
      'failed-processes': "EXISTS (SELECT FROM os_processes p WHERE p.session_id = o.session_id AND p.state = 'failed')",
      'budget-exceeded': 'EXISTS (SELECT FROM os_budget_exceeded b WHERE b.session_id = o.session_id)',
      // By any projection, not os_snapshot's alone.
      stopped: 'EXISTS (SELECT FROM os_blocked_sessions b WHERE b.session_id = o.session_id)',
    };
    await page.goto(`${server.url}/sessions`);
    for (const [filter, where] of Object.entries(filters)) {
      await page.locator(`a[data-filter="${filter}"]`).click();
      await page.waitForURL(new RegExp(`state=${filter}$`));
      const expected = await expectedOrder(where);
      expect(expected.length, filter).toBeGreaterThan(0);
      expect(await listedSessions(page), filter).toEqual(expected);
    }
    expect((await listedSessions(page)).sort()).toEqual([...OLDER_FORMAT, 'stopped']);
    expect(await page.locator('tr[data-session="stopped"] .stop').allTextContents()).toEqual(['stopped at seq 1 by os_snapshot', 'stopped at seq 1 by os_snapshot_v0_2_60']);
    expect(await page.locator(`tr[data-session="${OLDER_FORMAT[0]}"] .stop`).textContent()).toMatch(
      /^stopped at seq \d+ by os_snapshot_v0_2_60 \(older runtime format: os_snapshot_v0_2_60 cannot read it\)$/,
    );
  });

  it('a session: its snapshot as os-audit snapshot prints it, the slider showing the one at that seq as --at-seq does, its processes, signals and events as JSON', async () => {
    await page.goto(`${server.url}/sessions/sample-000000`);
    const snapshot = page.locator('#snapshot-json');
    expect(`${await snapshot.textContent()}\n`).toBe(await cli('snapshot', 'sample-000000'));

    await page.locator('#at').fill('7');
    await page.waitForURL(/\?at=7$/);
    const atSeven = await cli('snapshot', 'sample-000000', '--at-seq', '7');
    expect(`${await snapshot.textContent()}\n`).toBe(atSeven);
    expect(atSeven).not.toBe(await cli('snapshot', 'sample-000000'));
    expect(await page.locator('#snapshot h2').textContent()).toMatch(/after seq 7/);

    const { rows: counts } = await sql<{ processes: number; signals: number }>`
      SELECT (SELECT count(*)::int FROM os_processes WHERE session_id = 'sample-000000') AS processes,
             (SELECT count(*)::int FROM os_signals WHERE session_id = 'sample-000000') AS signals`.execute(testDb.db);
    expect(counts[0]!.processes).toBeGreaterThan(0);
    expect(await page.locator('#processes tbody tr').count()).toBe(counts[0]!.processes);
    expect(await page.locator('#signals tbody tr').count()).toBe(counts[0]!.signals);

    // Each event's JSON, as `os-audit events` prints it, indented.
    const events = (await cli('events', 'sample-000000', '--bare')).trim().split('\n');
    const shown = await page.locator('.event-json').allTextContents();
    expect(shown.length).toBe(events.length);
    expect(shown.map((text) => JSON.stringify(JSON.parse(text)))).toEqual(events.map((line) => JSON.stringify(JSON.parse(line))));
  });

  it('shows hostile event JSON as text: nothing of it runs or becomes markup', async () => {
    await page.goto(`${server.url}/sessions/hostile`);
    const json = await page.locator('.event-json').textContent();
    expect(json).toContain(JSON.stringify(HOSTILE_TOOL));
    expect(json).toContain(JSON.stringify(HOSTILE_REASON));
    expect(await page.evaluate(() => (globalThis as { __injected?: number }).__injected)).toBeUndefined();
    expect(await page.locator('main script, main img').count()).toBe(0);
    // The page's own script only, and a policy that forbids inline ones.
    expect(await page.evaluate(() => Array.from((globalThis as unknown as { document: { scripts: ArrayLike<{ src: string }> } }).document.scripts, (script) => new URL(script.src).pathname))).toEqual(['/assets/console.js']);
    const response = await page.request.get(`${server.url}/sessions/hostile`);
    expect(response.headers()['content-security-policy']).toMatch(/default-src 'self'/);
  });

  it('rejects bad parameters with one line, and answers only GET and HEAD', async () => {
    for (const [path, status, message] of [
      ['/sessions?state=asleep', 400, 'unknown state filter "asleep": use one of suspended, failed-processes, budget-exceeded, stopped'],
      ['/sessions?after=garbage', 400, 'the page cursor "after" is not one this console wrote: start again from the first page'],
      ['/sessions/sample-000000?at=x', 400, '"at" must be a seq: an integer from 0, not "x"'],
      ['/sessions/nobody', 404, 'no session "nobody": no event of it is stored (search for it on the sessions page)'],
    ] as const) {
      const response = await page.goto(`${server.url}${path}`);
      expect(response!.status(), path).toBe(status);
      expect(await page.locator('#error').textContent(), path).toBe(message);
    }
    await page.goto(`${server.url}/sessions/sample-000000?at=100000`);
    expect(await page.locator('#snapshot-none').textContent()).toMatch(/^the session ends at seq \d+; there is no seq 100000$/);
    const post = await page.request.post(`${server.url}/sessions`);
    expect(post.status()).toBe(405);
  });

  it('updates the live figures without reload: appends raise the lag and the append rate, a projector run folds them', async () => {
    await page.goto(`${server.url}/`);
    await page.evaluate(() => ((globalThis as { __samePage?: boolean }).__samePage = true));
    const lag = page.locator('[data-live="lag:os_snapshot"]');
    const applied = page.locator('[data-live="applied:os_snapshot"]');
    await expect.poll(() => lag.textContent()).toBe('0');
    const appliedBefore = Number(await applied.textContent());

    await new EventStore(testDb.db).append('live', [sampleEvent(0), sampleEvent(1), sampleEvent(2), sampleEvent(3), sampleEvent(4)]);
    await expect.poll(() => lag.textContent(), { timeout: 10_000 }).toBe('5');
    await expect.poll(async () => Number(await page.locator('[data-live="appended"]').textContent()), { timeout: 10_000 }).toBeGreaterThan(0);

    await cli('project', '--once');
    await expect.poll(() => lag.textContent(), { timeout: 10_000 }).toBe('0');
    await expect.poll(async () => Number(await applied.textContent()), { timeout: 10_000 }).toBe(appliedBefore + 5);
    expect(await page.locator('[data-live="rate:os_snapshot"]').textContent()).toMatch(/^\d+\.\d$/);
    expect(await page.evaluate(() => (globalThis as { __samePage?: boolean }).__samePage)).toBe(true);
  });

  it('logs in with the token as a basic auth password: the page, its assets and its live figures', async () => {
    const token = randomBytes(16).toString('hex');
    const guarded = await startObservabilityServer('127.0.0.1', 0, createConsoleRoutes({ db: testDb.db, projections: builtInProjections }), { authToken: token });
    const wrongPassword = await browser.newContext({ httpCredentials: { username: 'operator', password: `${token}x` } });
    const operator = await browser.newContext({ httpCredentials: { username: 'operator', password: token } });
    try {
      expect((await (await wrongPassword.newPage()).goto(`${guarded.url}/`))?.status()).toBe(401);
      const loggedIn = await operator.newPage();
      const answers = new Map<string, number>();
      loggedIn.on('response', (response) => answers.set(new URL(response.url()).pathname, response.status()));
      const live = loggedIn.waitForResponse((response) => response.url().endsWith('/api/live'));
      expect((await loggedIn.goto(`${guarded.url}/`))?.status()).toBe(200);
      expect((await live).status()).toBe(200);
      expect([answers.get('/assets/console.css'), answers.get('/assets/console.js')]).toEqual([200, 200]);
    } finally {
      await wrongPassword.close();
      await operator.close();
      await guarded.close();
    }
  });

  describe('as a member of os_audit_reader', () => {
    const user = `os_audit_test_console_${randomBytes(4).toString('hex')}`;
    const password = randomBytes(12).toString('hex');
    let readerDb: Kysely<DB>;
    let readerServer: ObservabilityServer;

    beforeAll(async () => {
      await sql`CREATE ROLE ${sql.id(user)} LOGIN PASSWORD ${sql.lit(password)} IN ROLE os_audit_reader`.execute(testDb.db);
      readerDb = openDatabase({ connectionString: connectionUrlAs(testDb.url, user, password) });
      readerServer = await startObservabilityServer('127.0.0.1', 0, createConsoleRoutes({ db: readerDb, projections: builtInProjections }));
    });

    afterAll(async () => {
      await readerServer?.close();
      await readerDb?.destroy();
      await dropLoginUser(testDb.db, user);
    });

    it('cannot read event bodies (checked), and every page still answers: the timeline without JSON, saying so', async () => {
      await expect(sql`SELECT payload FROM session_events LIMIT 1`.execute(readerDb)).rejects.toThrow(/permission denied/);
      for (const path of ['/', '/sessions', '/sessions?state=suspended', '/sessions?state=failed-processes', '/sessions?state=budget-exceeded', '/sessions?state=stopped', '/sessions?q=sample', '/sessions/stopped?from=1', '/sessions/sample-000000?at=3']) {
        const response = await page.goto(`${readerServer.url}${path}`);
        expect(response!.status(), path).toBe(200);
        expect(await page.locator('body').textContent(), path).not.toMatch(/permission denied/i);
      }

      await page.goto(`${readerServer.url}/`);
      expect(await page.locator('table[data-stopped="os_snapshot"] tbody tr td').nth(1).textContent()).toBe('seq 1');
      expect((await page.locator('tr[data-projection="os_snapshot"] td').allTextContents()).slice(6)).toEqual(['1', '–', 'not readable by this role']);

      await page.goto(`${readerServer.url}/sessions`);
      expect(await listedSessions(page)).toEqual((await expectedOrder('true')).slice(0, 50));

      await page.goto(`${readerServer.url}/sessions/sample-000000`);
      expect(await page.locator('#no-bodies').textContent()).toMatch(/Event bodies are private to this database role/);
      expect(await page.locator('.event-json').count()).toBe(0);
      expect(await page.locator('ol.timeline li').count()).toBe((await cli('events', 'sample-000000', '--bare')).trim().split('\n').length);
      expect(await page.locator('#at').count()).toBe(0);
      expect(`${await page.locator('#snapshot-json').textContent()}\n`).toBe(await cli('snapshot', 'sample-000000'));
      expect(await page.locator('#processes tbody tr').count()).toBeGreaterThan(0);

      await page.goto(`${readerServer.url}/sessions/sample-000000?at=3`);
      expect(await page.locator('#snapshot-none').textContent()).toMatch(/folded from the event bodies, which this database role may not read/);
    });
  });
});
