import { randomBytes } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createGroupRolesSql, down as revokeRoles, up as grantRoles } from '../../migrations/0005-roles.js';
import { down as dropBatchRequirements, up as createBatchRequirements } from '../../migrations/0006-batch-requirements.js';
import { builtInProjections } from '../../projections/index.js';
import { migrateToLatest } from '../../src/migrate-to-latest.js';
import { allMigrations } from '../../src/projector/migrate-projections.js';
import { openDatabase } from '../../src/db/open-database.js';
import type { DB } from '../../src/db/schema.js';
import type { ProjectionStatus } from '../../src/projector/projection-status.js';
import { ConcurrencyError } from '../../src/store/concurrency-error.js';
import { encodeEventValue } from '../../src/events/encode-event.js';
import { PostgresSessionLog } from '../../src/session-log/postgres-session-log.js';
import { EventStore } from '../../src/store/event-store.js';
import { emptyRows, pushRow } from '../../src/store/sql/event-rows.js';
import { pollUntil } from '../support/daemon-process.js';
import { useDaemonProcesses } from '../support/use-daemon-processes.js';
import { migrateTo } from '../support/migrate-to.js';
import { sampleEvent, sessionLine, useTempDir, writeSessionFile } from '../support/log-files.js';
import { compareWithFold, osSnapshotProjector } from '../support/projector-harness.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { databaseUrl, withClient } from '../support/scratch-database.js';
import { createTestDatabase, useTestDatabase } from '../support/test-database.js';

const testDb = useTestDatabase();
const tempDir = useTempDir();
const startDaemon = useDaemonProcesses();

/** A login user of the test server (roles are server-wide: unique names, dropped after the file). */
interface LoginUser {
  name: string;
  /** `url` (a database of the test server) as this user. */
  urlFor(url: string): string;
}

const users: string[] = [];
const pools: Kysely<DB>[] = [];

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  return withClient(inject('postgresAdminUrl'), work);
}

async function createLoginUser(label: string, options: string): Promise<LoginUser> {
  const name = `os_audit_test_${label}_${randomBytes(4).toString('hex')}`;
  const password = randomBytes(12).toString('hex');
  await admin((client) => client.query(`CREATE ROLE ${name} LOGIN PASSWORD '${password}' ${options}`));
  users.push(name);
  return {
    name,
    urlFor(url) {
      const asUser = new URL(url);
      asUser.username = name;
      asUser.password = password;
      return asUser.toString();
    },
  };
}

function connect(user: LoginUser): Kysely<DB> {
  const db = openDatabase({ connectionString: user.urlFor(testDb.url), maxConnections: 2 });
  pools.push(db);
  return db;
}

afterAll(async () => {
  await Promise.all(pools.map((db) => db.destroy()));
  await admin(async (client) => {
    // A projector's temporary table belongs to its user until its backend has exited.
    await pollUntil('the test users to disconnect', async () => {
      const { rows } = await client.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = ANY($1)', [users]);
      return rows[0].n === 0;
    });
    for (const name of users) await client.query(`DROP ROLE IF EXISTS ${name}`);
  });
});

/** The statement fails for lack of a privilege (not because a trigger refused it). */
async function expectDenied(db: Kysely<DB>, statement: string): Promise<void> {
  await expect(sql.raw(statement).execute(db), statement).rejects.toMatchObject({ code: '42501', message: expect.stringMatching(/^permission denied/) });
}

const SNAPSHOT_TABLES = builtInProjections.flatMap((projection) => projection.tables);
const OWN_TABLES = ['session_events', 'sessions', 'projection_checkpoints', 'projection_leases', 'projection_errors'];

async function viewsOf(db: Kysely<DB>): Promise<string[]> {
  const { rows } = await sql<{ viewname: string }>`SELECT viewname FROM pg_views WHERE schemaname = current_schema() ORDER BY 1`.execute(db);
  return rows.map((row) => row.viewname);
}

/** Migrations are written against an untyped Kysely: they run before the types exist. */
function untyped(db: Kysely<DB>): Kysely<unknown> {
  return db as unknown as Kysely<unknown>;
}

function events(count: number, from = 0) {
  return Array.from({ length: count }, (_, index) => sampleEvent(from + index));
}

describe('least-privilege roles', () => {
  let reader: LoginUser;
  let writer: LoginUser;
  let projector: LoginUser;
  let readerDb: Kysely<DB>;
  let writerDb: Kysely<DB>;
  let projectorDb: Kysely<DB>;

  beforeAll(async () => {
    reader = await createLoginUser('reader', 'IN ROLE os_audit_reader');
    writer = await createLoginUser('writer', 'IN ROLE os_audit_writer');
    projector = await createLoginUser('projector', 'IN ROLE os_audit_projector');
    readerDb = connect(reader);
    writerDb = connect(writer);
    projectorDb = connect(projector);
  });

  describe('os_audit_writer', () => {
    it('appends through EventStore: at the head, at an expected seq, sequenced rows of several sessions', async () => {
      const store = new EventStore(writerDb);
      expect(await store.append('w-1', events(5))).toEqual([0, 1, 2, 3, 4]);
      expect(await store.append('w-1', events(2, 5), { expectedSeq: 4 })).toEqual([5, 6]);
      await expect(store.append('w-1', events(1), { expectedSeq: 2 })).rejects.toBeInstanceOf(ConcurrencyError);

      const rows = emptyRows();
      for (const [sessionId, seq] of [['w-2', 0], ['w-2', 1], ['w-3', 0]] as const) {
        pushRow(rows, sessionId, seq, encodeEventValue(sampleEvent(seq), { sessionId, seq }));
      }
      await store.appendSequenced(rows);
      expect(Object.fromEntries(await store.lastSeqs(['w-1', 'w-2', 'w-3']))).toEqual({ 'w-1': 6, 'w-2': 1, 'w-3': 0 });
      // An event the snapshot cannot read: stored, and later a stopped session for the views.
      expect(await store.append('w-stopped', [{ kind: 'resumed' }])).toEqual([0]);
      // What the v0.2.60 snapshot adds, for its tables and views.
      const operation = { turn: 1, operation_id: 'op-1' };
      expect(
        await store.append('w-v0260', [
          { kind: 'budget_usage_reported', ...operation, reservation_id: 'r-1', tokens: 1200, subagents: 1, rounds: 2 },
          { kind: 'budget_exceeded', ...operation, budget: 'tokens' },
          { kind: 'signal_delivery_disposed', ...operation, delivery_id: 'd-1', attempt: 1, signal_id: 'sig-a', disposition: 'queue', queue_depth: 1 },
          { kind: 'operation_cancelled', ...operation, reason: 'user', pending_call_ids: [] },
        ]),
      ).toEqual([0, 1, 2, 3]);
      expect(await store.transaction((locked) => locked.lastSeq('w-1', { lock: true }))).toBe(6);
    });

    it('imports with os-audit import, and again stores nothing new', async () => {
      const dir = tempDir();
      writeSessionFile(dir, 'w-import', [
        sessionLine(0, sampleEvent(0)),
        sessionLine(1, { kind: 'budget_exceeded', turn: 1, budget: 'tokens' }),
        sessionLine(2, { kind: 'suspended', turn: 2, reason: 'ask_user', pending_calls: ['c1'] }),
      ]);
      const env = { DATABASE_URL: writer.urlFor(testDb.url) };
      expect(await runCliInProcess(['import', dir], { env })).toMatchObject({ code: 0, stdout: expect.stringMatching(/^imported 3 new events/) });
      expect(await runCliInProcess(['import', dir], { env })).toMatchObject({ code: 0, stdout: expect.stringMatching(/^imported 0 new events/) });
    });

    it('cannot change history, set what the database sets, or write the snapshot and the projector tables', async () => {
      for (const statement of [
        `UPDATE session_events SET kind = 'page_in'`,
        'DELETE FROM session_events',
        'TRUNCATE session_events',
        'DELETE FROM sessions',
        'TRUNCATE sessions',
        'UPDATE sessions SET first_recorded_at = now()',
        `INSERT INTO session_events (session_id, seq, kind, payload, recorded_at) VALUES ('w-9', 0, 'page_in', '{}', now())`,
        `INSERT INTO session_events (session_id, seq, kind, payload, transaction_id) VALUES ('w-9', 0, 'page_in', '{}', '1')`,
        `INSERT INTO os_snapshots (session_id, last_seq) VALUES ('w-1', 0)`,
        'DELETE FROM os_processes',
        'UPDATE projection_checkpoints SET position = 0',
        `INSERT INTO projection_leases VALUES ('os_snapshot', 'w', 99, now(), now())`,
      ]) {
        await expectDenied(writerDb, statement);
      }
      // It may move a head, but only forward: the trigger refuses the rest.
      await expect(sql`UPDATE sessions SET last_seq = last_seq - 1 WHERE session_id = 'w-1'`.execute(writerDb)).rejects.toThrow(/only moves forward/);
    });
  });

  describe('os_audit_projector', () => {
    it('runs the real Projector, and its snapshot equals the fold of each log', async () => {
      const report = await osSnapshotProjector(projectorDb).catchUp();
      expect(report).toMatchObject({ eventsApplied: 7 + 2 + 1 + 4 + 3, stopped: 1 });
      for (const { sessionId, sql: stored, fold } of await compareWithFold(projectorDb, ['w-1', 'w-2', 'w-3', 'w-import', 'w-stopped', 'w-v0260'])) {
        expect(stored, sessionId).toEqual(fold);
      }
    });

    it('cannot append events or change history', async () => {
      await expect(new EventStore(projectorDb).append('p-1', events(1))).rejects.toMatchObject({ code: '42501' });
      for (const statement of [
        `INSERT INTO session_events (session_id, seq, kind, payload) VALUES ('p-1', 0, 'page_in', '{}')`,
        `INSERT INTO sessions (session_id, last_seq) VALUES ('p-1', 0)`,
        `UPDATE session_events SET kind = 'page_in'`,
        'DELETE FROM session_events',
        'TRUNCATE session_events',
        'UPDATE sessions SET last_seq = last_seq + 1',
        'DELETE FROM sessions',
        'TRUNCATE os_snapshots',
      ]) {
        await expectDenied(projectorDb, statement);
      }
    });

    it('runs os-audit project --once, verify, rebuild and status', async () => {
      await new EventStore(writerDb).append('w-cli', events(4));
      const cli = (args: string[]) => runCliInProcess(args, { env: { DATABASE_URL: projector.urlFor(testDb.url) } });
      expect(await cli(['project', '--once'])).toMatchObject({ code: 0, stdout: expect.stringMatching(/^os_snapshot: projected 4 events in 1 batch/m) });
      expect(await cli(['verify', '--all'])).toMatchObject({ code: 0, stdout: expect.stringContaining('os_snapshot: verified 7 sessions: 0 differ from their log\n') });
      expect(await cli(['rebuild'])).toMatchObject({ code: 0 });
      expect(await cli(['verify', '--all'])).toMatchObject({ code: 0, stdout: expect.stringContaining('os_snapshot: verified 7 sessions: 0 differ from their log\n') });
      expect(await cli(['status'])).toMatchObject({ code: 0, stdout: expect.stringContaining('behind:     0 events') });
    });

    it("status names another user's open transaction without seeing its state", async () => {
      const holder = new pg.Client({ connectionString: testDb.url, application_name: 'horizon-holder' });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        const { rows } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_current_xact_id()');
        await new EventStore(writerDb).append('w-held', events(2));
        const run = await runCliInProcess(['status', '--json'], { env: { DATABASE_URL: projector.urlFor(testDb.url) } });
        expect(run.code).toBe(0);
        const [status] = JSON.parse(run.stdout) as [ProjectionStatus];
        expect(status.behind.events).toBe(2);
        expect(status.horizonHeldBy).not.toBeNull();
        // The oldest open transaction on the server: ours, unless another test's is older still.
        if (status.horizonHeldBy!.pid === rows[0]!.pid) {
          expect(status.horizonHeldBy).toMatchObject({ database: testDb.name, application: 'horizon-holder', state: null, transactionAgeSeconds: null });
        }
        expect((await runCliInProcess(['status'], { env: { DATABASE_URL: projector.urlFor(testDb.url) } })).code).toBe(0);
      } finally {
        await holder.query('ROLLBACK');
        await holder.end();
      }
    });

    it('runs the os-audit project daemon until SIGTERM', async () => {
      const daemon = startDaemon(projector.urlFor(testDb.url), { owner: `roles-daemon-${randomBytes(3).toString('hex')}` });
      const [last] = (await new EventStore(writerDb).append('w-daemon', events(3))).slice(-1);
      await pollUntil(
        'the daemon to fold w-daemon',
        async () => {
          if (!daemon.isRunning()) throw new Error(`the daemon exited: ${daemon.stderr()}`);
          const row = await readerDb.selectFrom('os_session_overview').select('projected_seq').where('session_id', '=', 'w-daemon').executeTakeFirst();
          return row?.projected_seq === last;
        },
        { explain: () => daemon.stderr() },
      );
      expect(await daemon.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    });
  });

  describe('os_audit_reader', () => {
    it('selects every snapshot table and every view (each holding rows by now)', async () => {
      const views = await viewsOf(testDb.db);
      expect(views).toEqual(expect.arrayContaining(['os_snapshot_json', 'os_session_overview', 'os_projection_lag', 'os_event_activity']));
      for (const relation of [...SNAPSHOT_TABLES, ...views]) {
        const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(relation)}`.execute(readerDb);
        expect(rows[0]!.n, relation).toBeGreaterThan(0);
      }
    });

    it('cannot read the log or the projector tables, nor write anything', async () => {
      for (const table of OWN_TABLES) await expectDenied(readerDb, `SELECT count(*) FROM ${table}`);
      for (const statement of [
        `INSERT INTO os_snapshots (session_id, last_seq) VALUES ('r-1', 0)`,
        'UPDATE os_processes SET state = \'failed\'',
        'DELETE FROM os_signals',
        'TRUNCATE os_budget_exceeded',
        `INSERT INTO session_events (session_id, seq, kind, payload) VALUES ('r-1', 0, 'page_in', '{}')`,
        'UPDATE sessions SET last_seq = last_seq + 1',
        'DELETE FROM session_events',
        'UPDATE projection_checkpoints SET position = 0',
        'DELETE FROM projection_errors',
      ]) {
        await expectDenied(readerDb, statement);
      }
    });
  });

  describe('the roles migration', () => {
    it('migrates two databases at once, and again, granting the same in each', async () => {
      const fresh = await Promise.all([createTestDatabase({ migrate: false }), createTestDatabase({ migrate: false })]);
      try {
        // The roles migration in the schema of its own time (later migrations change the tables it grants on).
        await Promise.all(fresh.map((scratch) => migrateTo(scratch.db, '0006-batch-requirements')));
        for (const scratch of fresh) {
          await grantRoles(untyped(scratch.db));
          const { rows } = await sql<{ reads: boolean; appends: boolean; projects: boolean }>`
            SELECT has_table_privilege('os_audit_reader', 'os_event_activity', 'SELECT') AS reads,
                   has_column_privilege('os_audit_writer', 'session_events', 'payload', 'INSERT') AS appends,
                   has_database_privilege('os_audit_projector', current_database(), 'TEMPORARY') AS projects`.execute(scratch.db);
          expect(rows[0]).toEqual({ reads: true, appends: true, projects: true });
        }
        const applied = await Promise.all(fresh.map((scratch) => migrateToLatest(scratch.db)));
        // The last in name order, as kysely's Migrator applies them (not the last key: projections' come after the engine's).
        for (const names of applied) expect(names.at(-1)).toBe(Object.keys(allMigrations(builtInProjections)).sort().at(-1));
        for (const scratch of fresh) expect(await migrateToLatest(scratch.db)).toEqual([]);
      } finally {
        await Promise.all(fresh.map((scratch) => scratch.drop()));
      }
    });

    it('tolerates a concurrent creator of a role', async () => {
      const role = `os_audit_test_group_${randomBytes(4).toString('hex')}`;
      const create = createGroupRolesSql([role]).compile(testDb.db).sql;
      const [first, second] = [new pg.Client({ connectionString: testDb.url }), new pg.Client({ connectionString: inject('postgresAdminUrl') })];
      await Promise.all([first.connect(), second.connect()]);
      try {
        await first.query('BEGIN');
        await first.query(create);
        await second.query('BEGIN');
        const secondPid = (await second.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        const waiting = second.query(create);
        // The second creator waits for the first one's uncommitted role, then finds it there.
        await pollUntil('the second creator to wait for the first', async () => {
          const { rows } = await sql<{ wait_event_type: string | null }>`SELECT wait_event_type FROM pg_stat_activity WHERE pid = ${secondPid}`.execute(testDb.db);
          return rows[0]?.wait_event_type === 'Lock';
        });
        await first.query('COMMIT');
        await waiting;
        await second.query('COMMIT');
        await second.query(create);
        const { rows } = await second.query('SELECT rolcanlogin FROM pg_roles WHERE rolname = $1', [role]);
        expect(rows).toEqual([{ rolcanlogin: false }]);
      } finally {
        await second.query(`DROP ROLE IF EXISTS ${role}`).catch(() => {});
        await Promise.all([first.end(), second.end()]);
      }
    });

    it('down takes the grants back and keeps the roles; up grants again', async () => {
      const scratch = await createTestDatabase({ migrate: false });
      try {
        await migrateTo(scratch.db, '0006-batch-requirements');
        // Every privilege granted to the three roles in this database, on anything.
        const grants = async () => {
          const { rows } = await sql<{ grants: number; roles: number }>`
            SELECT (SELECT count(*)::int
                    FROM (SELECT relacl AS acl FROM pg_class WHERE relnamespace = current_schema()::regnamespace
                          UNION ALL SELECT a.attacl FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
                                    WHERE c.relnamespace = current_schema()::regnamespace
                          UNION ALL SELECT proacl FROM pg_proc WHERE pronamespace = current_schema()::regnamespace
                          UNION ALL SELECT nspacl FROM pg_namespace WHERE nspname = current_schema()
                          UNION ALL SELECT datacl FROM pg_database WHERE datname = current_database()) AS objects,
                         aclexplode(objects.acl) AS entry
                    WHERE entry.grantee IN (SELECT oid FROM pg_roles WHERE rolname IN ('os_audit_reader', 'os_audit_writer', 'os_audit_projector'))) AS grants,
                   (SELECT count(*)::int FROM pg_roles WHERE rolname IN ('os_audit_reader', 'os_audit_writer', 'os_audit_projector')) AS roles`.execute(scratch.db);
          return rows[0]!;
        };
        const migrated = await grants();
        expect(migrated.grants).toBeGreaterThan(0);
        // Down to before the roles (a later migration's grants go with it), and up again.
        await dropBatchRequirements(untyped(scratch.db));
        await revokeRoles(untyped(scratch.db));
        expect(await grants()).toEqual({ grants: 0, roles: 3 });
        await grantRoles(untyped(scratch.db));
        await createBatchRequirements(untyped(scratch.db));
        expect(await grants()).toEqual(migrated);
      } finally {
        await scratch.drop();
      }
    });

    it('runs for a migrator without CREATEROLE once the roles exist, and says what to do when one is missing', async () => {
      const migrator = await createLoginUser('migrator', 'NOCREATEROLE');
      const name = `os_audit_test_${randomBytes(6).toString('hex')}`;
      await admin((client) => client.query(`CREATE DATABASE ${name} OWNER ${migrator.name}`));
      const url = databaseUrl(inject('postgresAdminUrl'), name);
      const db = openDatabase({ connectionString: migrator.urlFor(url), maxConnections: 1 });
      try {
        expect(await migrateToLatest(db)).toContain('0005-roles');
        const missing = `os_audit_test_missing_${randomBytes(4).toString('hex')}`;
        await expect(createGroupRolesSql([missing]).execute(db)).rejects.toMatchObject({
          code: '42501',
          message: `os-audit needs the group role ${missing}, and role ${migrator.name} may not create roles: run os-audit migrate as a superuser or a role with CREATEROLE, or have an administrator run "CREATE ROLE ${missing} NOLOGIN" first`,
        });
        const asReader = openDatabase({ connectionString: reader.urlFor(url), maxConnections: 1 });
        try {
          expect(await asReader.selectFrom('os_projection_lag').select('lag_events').execute()).toEqual(builtInProjections.map(() => ({ lag_events: 0 })));
        } finally {
          await asReader.destroy();
        }
      } finally {
        await db.destroy();
        await admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      }
    });
  });
  // After the tests above, which count the sessions they wrote.
  describe('os_audit_writer and the contiguity of session logs', () => {
    it('cannot move a head past its events, store a head without events, or an event past its head', async () => {
      const refused = (constraint: string, message: string) => ({ code: '23514', constraint, message });
      await expect(sql`UPDATE sessions SET last_seq = last_seq + 5 WHERE session_id = 'w-1'`.execute(writerDb)).rejects.toMatchObject(
        refused('sessions_head_at_last_event', 'session "w-1": its head is at seq 11 but its log ends at seq 6'),
      );
      await expect(sql`INSERT INTO sessions (session_id, last_seq) VALUES ('w-empty', 3)`.execute(writerDb)).rejects.toMatchObject(
        refused('sessions_head_at_last_event', 'session "w-empty": its head is at seq 3 but it has no event'),
      );
      const insert = (seq: number) => sql`INSERT INTO session_events (session_id, seq, kind, payload) VALUES ('w-1', ${seq}, 'page_in', '{"kind":"page_in"}')`.execute(writerDb);
      await expect(insert(7)).rejects.toMatchObject(refused('session_events_contiguous', `session "w-1": seq 7 is past the session's head (last_seq 6)`));
      await expect(insert(9)).rejects.toMatchObject(refused('session_events_contiguous', 'session "w-1": seq 9 would leave a hole in its log: seq 8 is not stored'));
      await expect(sql`UPDATE sessions SET last_recorded_at = now() - interval '1 day' WHERE session_id = 'w-1'`.execute(writerDb)).rejects.toMatchObject({ code: '42501' });
      expect(await new EventStore(writerDb).lastSeq('w-1')).toBe(6);
    });

    it('cannot store a row that disagrees with its event, choose its hash, or move a head hash (0017)', async () => {
      const inTransaction = (statements: string[]) =>
        writerDb.transaction().execute(async (trx) => {
          await sql`UPDATE sessions SET last_seq = 7 WHERE session_id = 'w-1'`.execute(trx);
          for (const statement of statements) await sql.raw(statement).execute(trx);
        });
      const insert = (columns: string, values: string) => inTransaction([`INSERT INTO session_events (session_id, seq, ${columns}) VALUES ('w-1', 7, ${values})`]);
      await expect(insert('kind, turn, payload', `'page_in', 999, '{"kind":"page_in","turn":1}'`)).rejects.toMatchObject({
        code: '23514',
        column: 'turn',
        message: 'session "w-1": seq 7: column turn (999) is not the event\'s turn (1)',
      });
      await expect(insert('kind, payload', `'page_out', '{"kind":"page_in"}'`)).rejects.toMatchObject({ code: '23514', constraint: 'session_events_payload_kind' });
      for (const payloadText of [`'not json at all'`, `'{"kind":"page_in","a":"\\u0000","b":2}'`, `'{"kind":"page_in"}'`]) {
        await expect(insert('kind, payload, payload_text', `'page_in', '{"kind":"page_in","a":{"os_audit_unstorable_string":"�"}}', ${payloadText}`)).rejects.toMatchObject({
          code: '23514',
          column: 'payload_text',
        });
      }
      await expect(insert('kind, payload, hash', `'page_in', '{"kind":"page_in"}', '\\x00'`)).rejects.toMatchObject({ code: '42501' });
      await expect(sql`UPDATE sessions SET head_hash = '\\x00' WHERE session_id = 'w-1'`.execute(writerDb)).rejects.toMatchObject({ code: '42501' });
      await expect(sql`UPDATE session_events SET hash = NULL WHERE session_id = 'w-1'`.execute(writerDb)).rejects.toMatchObject({ code: '42501' });
      await expect(inTransaction([`SET LOCAL os_audit.backfilling_chain = on`, `UPDATE session_events SET payload = '{"kind":"page_in"}' WHERE session_id = 'w-1'`])).rejects.toMatchObject({ code: '42501' });
      expect(await new EventStore(writerDb).lastSeq('w-1')).toBe(6);
    });

    it('appends through COPY (a large append, an import) and the SDK SessionLog', async () => {
      const store = new EventStore(writerDb);
      expect((await store.append('w-copy', events(600))).at(-1)).toBe(599);
      const dir = tempDir();
      for (const sessionId of ['w-import-copy-1', 'w-import-copy-2']) writeSessionFile(dir, sessionId, events(300).map((event, seq) => sessionLine(seq, event)));
      expect(await runCliInProcess(['import', dir], { env: { DATABASE_URL: writer.urlFor(testDb.url) } })).toMatchObject({ code: 0, stdout: expect.stringMatching(/^imported 600 new events/) });
      const log = new PostgresSessionLog(writerDb);
      expect(await Promise.all([1, 2].map((turn) => log.append('w-sdk', { kind: 'page_in', turn, entry_count: 1 })))).toEqual([0, 1]);
      expect(Object.fromEntries(await store.lastSeqs(['w-copy', 'w-import-copy-1', 'w-import-copy-2', 'w-sdk']))).toEqual({
        'w-copy': 599,
        'w-import-copy-1': 299,
        'w-import-copy-2': 299,
        'w-sdk': 1,
      });
    });
  });
});
