import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { type Kysely, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/open-database.js';
import type { DB } from '../../src/db/schema.js';
import { EventStore } from '../../src/store/event-store.js';
import { exampleEvent } from '../support/example-events.js';
import { osSnapshotProjector, waitForHorizon } from '../support/projector-harness.js';
import { withClient } from '../support/scratch-database.js';
import { useTestDatabase } from '../support/test-database.js';
import { hostPathOf, postgresDatasource, readComposeFile } from './deploy-files.js';
import { connectionUrlAs, dropLoginUser } from './login-user.js';

const testDb = useTestDatabase();
const compose = readComposeFile();

/** The SQL scripts the postgres image runs on a new volume, in the order it runs them. */
function initScripts(): string[] {
  const folder = hostPathOf(compose.services.postgres!, '/docker-entrypoint-initdb.d')!;
  return readdirSync(folder)
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .map((file) => readFileSync(path.join(folder, file), 'utf8'));
}

async function runInitScripts(db: Kysely<DB>, scripts: readonly string[]): Promise<void> {
  for (const script of scripts) await sql.raw(script).execute(db);
}

interface RoleFacts {
  name: string;
  login: boolean;
  memberOf: string[];
}

async function rolesLike(db: Kysely<DB>, prefix: string): Promise<RoleFacts[]> {
  const { rows } = await sql<RoleFacts>`
    SELECT r.rolname AS name, r.rolcanlogin AS login,
      coalesce(array_agg(g.rolname::text ORDER BY g.rolname) FILTER (WHERE g.rolname IS NOT NULL), '{}'::text[]) AS "memberOf"
    FROM pg_roles r
    LEFT JOIN pg_auth_members m ON m.member = r.oid
    LEFT JOIN pg_roles g ON g.oid = m.roleid
    WHERE starts_with(r.rolname, ${prefix})
    GROUP BY r.rolname, r.rolcanlogin
    ORDER BY r.rolname`.execute(db);
  return rows;
}

async function roleExists(db: Kysely<DB>, name: string): Promise<boolean> {
  const { rows } = await sql`SELECT FROM pg_roles WHERE rolname = ${name}`.execute(db);
  return rows.length > 0;
}

describe('the PostgreSQL init scripts of the compose deployment', () => {
  it('create the group roles when missing and a login user in each, and change nothing when run again', async () => {
    // Roles belong to the whole server, where the tests' migrations create the real groups:
    // the scripts run here with every os_audit_ name under a prefix of this test's own.
    const prefix = `os_audit_t${randomBytes(4).toString('hex')}_`;
    const scripts = initScripts().map((script) => script.replaceAll('os_audit_', prefix));
    try {
      await runInitScripts(testDb.db, scripts);
      const created = await rolesLike(testDb.db, prefix);
      expect(created).toEqual([
        { name: `${prefix}daemon`, login: true, memberOf: [`${prefix}projector`] },
        { name: `${prefix}grafana`, login: true, memberOf: [`${prefix}reader`] },
        { name: `${prefix}projector`, login: false, memberOf: [] },
        { name: `${prefix}reader`, login: false, memberOf: [] },
      ]);
      await runInitScripts(testDb.db, scripts);
      expect(await rolesLike(testDb.db, prefix)).toEqual(created);
    } finally {
      for (const role of ['daemon', 'grafana', 'projector', 'reader']) await sql`DROP ROLE IF EXISTS ${sql.id(prefix + role)}`.execute(testDb.db);
    }
  });

  it('let the projector run as the compose projector user, and Grafana read as its data source user', async () => {
    const daemonUrl = new URL(compose.services.projector!.environment!.DATABASE_URL!);
    const datasource = postgresDatasource(compose.services.grafana!);
    const daemon = { user: decodeURIComponent(daemonUrl.username), password: decodeURIComponent(daemonUrl.password) };
    // Left in place when they were there before (a server the compose file started, say).
    const ours = [];
    for (const user of [daemon.user, datasource.user]) if (!(await roleExists(testDb.db, user))) ours.push(user);
    const daemonDb = openDatabase({ connectionString: connectionUrlAs(testDb.url, daemon.user, daemon.password), applicationName: 'os-audit-init-test' });
    try {
      await runInitScripts(testDb.db, initScripts());
      await runInitScripts(testDb.db, initScripts());

      await new EventStore(testDb.db).append('init-suspended', [exampleEvent('tool_gated'), exampleEvent('suspended')]);
      await waitForHorizon(testDb.db);
      const report = await osSnapshotProjector(daemonDb).catchUp();
      expect(report.eventsApplied).toBe(2);

      await withClient(connectionUrlAs(testDb.url, datasource.user, datasource.secureJsonData.password), async (grafana) => {
        const { rows } = await grafana.query('SELECT session_id, reason FROM os_suspended_sessions');
        expect(rows).toEqual([{ session_id: 'init-suspended', reason: 'sub_agent_await' }]);
        await expect(grafana.query('SELECT 1 FROM session_events')).rejects.toThrow(/permission denied/);
      });
    } finally {
      await daemonDb.destroy();
      for (const user of ours) await dropLoginUser(testDb.db, user);
    }
  });
});
