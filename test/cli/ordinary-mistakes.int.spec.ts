import { createServer } from 'node:net';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DiskFullError } from '../../src/db/disk-full.js';
import { retryOnConnectionLoss } from '../../src/db/retry-on-connection-loss.js';
import { openDatabase } from '../../src/db/open-database.js';
import { EventStore } from '../../src/store/event-store.js';
import { describeFailure } from '../../src/cli/describe-failure.js';
import { useTempDir } from '../support/log-files.js';
import { migrateTo } from '../support/migrate-to.js';
import { restoreDump } from '../support/restore-dump.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { createTestDatabase, useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();
const tempDir = useTempDir();
const cli = (args: string[], env: NodeJS.ProcessEnv = { DATABASE_URL: testDb.url }, stdin?: string) => runCliInProcess(args, { env, stdin });
const oneEvent = '{"session_id":"s1","seq":0,"event":{"kind":"run_started"}}\n';

/** `url` with another database name, user or port. */
function changed(url: string, change: { database?: string; user?: string; password?: string; port?: number }): string {
  const parsed = new URL(url);
  if (change.database !== undefined) parsed.pathname = `/${change.database}`;
  if (change.user !== undefined) parsed.username = change.user;
  if (change.password !== undefined) parsed.password = change.password;
  if (change.port !== undefined) parsed.port = String(change.port);
  return parsed.toString();
}

/** The password of the roles these tests make: the embedded server asks for one, where a local server may trust. */
const ROLE_PASSWORD = 'os-audit-test';

/** A TCP port nobody listens on (taken, then given back). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** One line on stderr, no stack trace, nothing on stdout. */
function expectOneLine(run: { code: number; stdout: string; stderr: string }, code: number, line: RegExp): void {
  expect(run).toMatchObject({ code, stdout: '' });
  expect(run.stderr).toMatch(/^os-audit: [^\n]*\n$/);
  expect(run.stderr).toMatch(line);
}

describe('ordinary mistakes: one line that says what to do', () => {
  it('a file or directory that is missing, or of the wrong kind', async () => {
    const dir = tempDir();
    expectOneLine(await cli(['append', 's1', path.join(dir, 'missing.json')]), 1, /^os-audit: cannot read .*missing\.json: no such file or directory$/m);
    expectOneLine(await cli(['append', 's1', dir]), 1, /^os-audit: .* is a directory: give a file of events, or - for standard input$/m);
    expectOneLine(await cli(['import', path.join(dir, 'missing')]), 1, /^os-audit: cannot read .*missing: no such file or directory$/m);
    writeFileSync(path.join(dir, 'file'), '');
    expectOneLine(await cli(['import', path.join(dir, 'file', 'below')]), 1, /^os-audit: cannot read .*below: a part of the path is not a directory$/m);
    // Without a database URL, the embedded server's folder.
    expectOneLine(await cli(['--data-dir', path.join(dir, 'file'), 'status'], {}), 1, /^os-audit: cannot create directory .*file: a file of that name is in the way$/m);
  });

  describe('a database without the os-audit schema', () => {
    const unmigrated = {} as { url: string; name: string; drop(): Promise<void> };
    beforeAll(async () => Object.assign(unmigrated, await createTestDatabase({ migrate: false })));
    afterAll(async () => unmigrated.drop());

    it.each([
      [['status']],
      [['snapshot', 's1']],
      [['events', 's1']],
      [['verify', '--all']],
      [['project', '--once']],
      [['rebuild']],
      [['import', '-']],
      [['append', 's1', '-']],
    ])('%j says to run os-audit migrate', async (args) => {
      const run = await cli(args, { DATABASE_URL: unmigrated.url }, oneEvent);
      expectOneLine(run, 1, new RegExp(`^os-audit: database ${unmigrated.name} has no os-audit schema, or an older one than this os-audit \\(.*\\): run \`os-audit migrate\`$`, 'm'));
    });

    it('one migrated by an older os-audit says so too, and migrate brings it up', async () => {
      const older = await createTestDatabase({ migrate: false });
      try {
        // A real database of that era: today's 0002 no longer makes the OS snapshot's tables.
        await restoreDump(older.url, new URL('../fixtures/old-databases/at-0006.sql', import.meta.url));
        const behind = /^os-audit: database \w+ has no os-audit schema, or an older one than this os-audit \(.*\): run `os-audit migrate`\n$/;
        expectOneLine(await cli(['status'], { DATABASE_URL: older.url }), 1, behind);
        // The daemon logs its leases before its first batch fails; the failure is the last line.
        const project = await cli(['project', '--once', '--log-format', 'json'], { DATABASE_URL: older.url });
        expect(project.code).toBe(1);
        expect(project.stderr.split('\n').at(-2)).toMatch(/^os-audit: .* run `os-audit migrate`$/);
        expect((await cli(['migrate'], { DATABASE_URL: older.url })).code).toBe(0);
        // 0007 folds the OS snapshot again from the start: its checkpoint, and the failed batch's error, start over.
        expect((await cli(['project', '--once'], { DATABASE_URL: older.url })).code).toBe(0);
        expect((await cli(['status'], { DATABASE_URL: older.url })).code).toBe(0);
      } finally {
        await older.drop();
      }
    });
  });

  it('migrate says what failed when no migration did: a role without CREATE, a database migrated by a newer os-audit', async () => {
    const fresh = await createTestDatabase({ migrate: false });
    const admin = new pg.Client({ connectionString: testDb.url });
    await admin.connect();
    const role = `os_audit_weak_${process.pid}`;
    try {
      await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${ROLE_PASSWORD}'`);
      expectOneLine(
        await cli(['migrate'], { DATABASE_URL: changed(fresh.url, { user: role, password: ROLE_PASSWORD }) }),
        1,
        new RegExp(`^os-audit: migrating failed before any migration ran: role ${role} may not create tables in schema public: migrate as the database's owner, or GRANT CREATE ON SCHEMA public TO ${role}$`, 'm'),
      );
    } finally {
      await admin.query(`DROP ROLE IF EXISTS ${role}`);
      await admin.end();
      await fresh.drop();
    }
    const newer = await createTestDatabase();
    try {
      await newer.db.insertInto('kysely_migration' as never).values({ name: '9999-from-the-future', timestamp: new Date().toISOString() } as never).execute();
      expectOneLine(await cli(['migrate'], { DATABASE_URL: newer.url }), 1, /^os-audit: this database was migrated by a newer os-audit \(its migration 9999-from-the-future is unknown to this one\): upgrade os-audit$/m);
    } finally {
      await newer.drop();
    }
  });

  it('a database URL that is no PostgreSQL URL is a usage error naming where it came from', async () => {
    const example = /e\.g\. postgres:\/\/USER:PASSWORD@HOST:5432\/DATABASE$/m;
    expectOneLine(await cli(['status'], { DATABASE_URL: 'notaurl' }), 2, /^os-audit: DATABASE_URL is not a URL: expected postgres:\/\/ or postgresql:\/\//m);
    expectOneLine(await cli(['--database-url', 'notaurl', 'status']), 2, /^os-audit: --database-url is not a URL/m);
    expectOneLine(await cli(['status'], { DATABASE_URL: 'http://db/os_audit' }), 2, /^os-audit: DATABASE_URL is a http:\/\/ URL: expected postgres:\/\/ or postgresql:\/\//m);
    expectOneLine(await cli(['status'], { DATABASE_URL: 'postgres://[oops/x' }), 2, example);
    // libpq's form without a host (a Unix socket named by ?host=) is accepted.
    const socketForm = await cli(['status'], { DATABASE_URL: 'postgres://postgres@/nowhere?host=/nonexistent-socket-dir' });
    expect(socketForm.stderr).not.toMatch(/not a (valid )?URL/);
  });

  it('a database URL that can never work fails at once: unknown host, missing database, refused login', async () => {
    const started = Date.now();
    expectOneLine(await cli(['status'], { DATABASE_URL: 'postgres://postgres@no-such-host.invalid:5432/os_audit' }), 1, /^os-audit: cannot resolve host no-such-host\.invalid \(from DATABASE_URL\): fix the host in the URL$/m);
    expectOneLine(
      await cli(['--database-url', changed(testDb.url, { database: 'no_such_database' }), 'snapshot', 's1']),
      1,
      /^os-audit: database "no_such_database" does not exist \(from --database-url\): create it \(createdb no_such_database\), or fix the database name in the URL$/m,
    );
    const admin = new pg.Client({ connectionString: testDb.url });
    await admin.connect();
    const role = `os_audit_nologin_${process.pid}`;
    try {
      await admin.query(`CREATE ROLE ${role} NOLOGIN PASSWORD '${ROLE_PASSWORD}'`);
      expectOneLine(await cli(['status'], { DATABASE_URL: changed(testDb.url, { user: role, password: ROLE_PASSWORD }) }), 1, new RegExp(`^os-audit: role "${role}" is not permitted to log in \\(from DATABASE_URL\\): fix the user or password in the URL$`, 'm'));
    } finally {
      await admin.query(`DROP ROLE IF EXISTS ${role}`);
      await admin.end();
    }
    // None of them waited for the database to come back (commands ride through a lost connection for 60 s).
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('a refused connection names host and port and says to start the server or set DATABASE_URL', async () => {
    const port = await closedPort();
    // What a command throws once its retry time is over.
    const connect = () => new pg.Client({ connectionString: changed(testDb.url, { port }) }).connect();
    const error = await retryOnConnectionLoss(connect, { retryForMs: 200 }).catch((failure: unknown) => failure);
    expect(describeFailure(error, { databaseUrlFrom: 'DATABASE_URL' })).toBe(
      `cannot connect to PostgreSQL at 127.0.0.1:${port} (from DATABASE_URL): connection refused; start the server there, or set DATABASE_URL (or --database-url) to a running one`,
    );
  });

  it.each([[['status']], [['snapshot', 's1']]])('%j against a port where nothing listens ends at its retry deadline, exit 1', async (args) => {
    const port = await closedPort();
    const started = Date.now();
    const run = await cli(args, { DATABASE_URL: changed(testDb.url, { port }), OS_AUDIT_CONNECT_RETRY_SECONDS: '3' });
    const elapsedMs = Date.now() - started;
    // The wait for a connection and the reruns of the command share the deadline (they once took twice it).
    expect(elapsedMs).toBeGreaterThanOrEqual(3000);
    expect(elapsedMs).toBeLessThan(5000);
    expect(run).toMatchObject({ code: 1, stdout: '' });
    const [notice, ...rest] = run.stderr.split(/(?<=\n)/);
    expect(notice).toMatch(/^os-audit: cannot reach PostgreSQL \(.*ECONNREFUSED.*\); trying again for up to 3 s\n$/);
    expect(rest).toEqual([`os-audit: cannot connect to PostgreSQL at 127.0.0.1:${port} (from DATABASE_URL): connection refused; start the server there, or set DATABASE_URL (or --database-url) to a running one\n`]);
  });

  it('OS_AUDIT_CONNECT_RETRY_SECONDS takes whole seconds only', async () => {
    expectOneLine(await cli(['status'], { DATABASE_URL: testDb.url, OS_AUDIT_CONNECT_RETRY_SECONDS: '1.5' }), 2, /^os-audit: invalid OS_AUDIT_CONNECT_RETRY_SECONDS="1\.5": expected a whole number from 0$/m);
  });

  it('a full disk: a DiskFullError from the store, one line from the CLI, nothing stored', async () => {
    // A full disk made by hand: the server refuses each insert with SQLSTATE 53100, as it would.
    const full = await createTestDatabase();
    const db = openDatabase({ connectionString: full.url });
    try {
      await sql`CREATE FUNCTION disk_is_full() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'could not extend file "base/1/2": No space left on device' USING ERRCODE = 'disk_full'; END $$`.execute(db);
      await sql`CREATE TRIGGER disk_is_full BEFORE INSERT ON session_events FOR EACH ROW EXECUTE FUNCTION disk_is_full()`.execute(db);
      const refused = await new EventStore(db).append('s1', [{ kind: 'run_started' }]).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(DiskFullError);
      expect(refused).toMatchObject({ cause: { code: '53100' } });
      expectOneLine(
        await cli(['append', 's1', '-'], { DATABASE_URL: full.url }, '{"kind":"run_started"}\n'),
        1,
        /^os-audit: PostgreSQL's disk is full \(could not extend file "base\/1\/2": No space left on device\) \(from DATABASE_URL\): nothing of the failed write was stored; free space on the server's disk \(or grow its volume\), then run the command again$/m,
      );
      expect((await sql<{ n: number }>`SELECT count(*)::int AS n FROM session_events`.execute(db)).rows[0]!.n).toBe(0);
    } finally {
      await db.destroy();
      await full.drop();
    }
  });

  it('OS_AUDIT_DEBUG prints the stack trace instead of the line', async () => {
    const run = await cli(['status'], { DATABASE_URL: changed(testDb.url, { database: 'no_such_database' }), OS_AUDIT_DEBUG: '1' });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^os-audit: error: database "no_such_database" does not exist\n {4}at /);
  });
});
