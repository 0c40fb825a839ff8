import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../src/migrate-to-latest.js';
import { openDatabase } from '../../src/db/open-database.js';
import type { DB } from '../../src/db/schema.js';
import { importLogs } from '../../src/import/import-logs.js';
import { EventStore } from '../../src/store/event-store.js';
import { panelQueries, readDashboard } from '../deploy/dashboard-panels.js';
import { commandLine, type ComposeService, hostPathOf, postgresDatasource, readComposeFile } from '../deploy/deploy-files.js';
import { expandGrafanaMacros } from '../deploy/grafana-macros.js';
import { connectionUrlAs, dropLoginUser } from '../deploy/login-user.js';
import { POSTGRES_BIN } from '../support/citus-cluster.js';
import { citusTestCluster, citusTestsRun } from '../support/citus-database.js';
import { exampleEvent } from '../support/example-events.js';
import { useTempDir } from '../support/log-files.js';
import { osSnapshotProjector } from '../support/projector-harness.js';
import { databaseUrl, dropDatabase, withClient } from '../support/scratch-database.js';

const run = promisify(execFile);
const tempDir = useTempDir('os-audit-compose-');
const compose = readComposeFile('docker-compose.citus.yml');
const service = (name: string): ComposeService => {
  const found = compose.services[name];
  if (!found) throw new Error(`no service ${name} in docker-compose.citus.yml`);
  return found;
};


/** The login users' init scripts, as the coordinator's entrypoint runs them (in name order). */
function coordinatorInitScripts(): string[] {
  const coordinator = service('coordinator');
  return coordinator
    .volumes!.flatMap((volume) => (typeof volume === 'string' ? [volume.split(':')[1]!] : []))
    .filter((target) => target.startsWith('/docker-entrypoint-initdb.d/') && target.endsWith('.sql'))
    .sort()
    .map((target) => readFileSync(hostPathOf(coordinator, target)!, 'utf8'));
}

describe.runIf(citusTestsRun)('docker-compose.citus.yml on a Citus cluster (its SQL, without Docker)', () => {
  const cluster = () => citusTestCluster();
  /** The compose file's nodes, by service name, as the test cluster's. */
  const nodeUrls = () => {
    const { coordinatorUrl, workerUrls } = cluster();
    const workers = Object.keys(compose.services).filter((name) => /^worker-\d+$/.test(name)).sort();
    expect(workers).toHaveLength(workerUrls.length);
    return { coordinator: coordinatorUrl, ...Object.fromEntries(workers.map((name, i) => [name, workerUrls[i]!])) } as Record<string, string>;
  };
  const database = `os_audit_compose_${randomBytes(6).toString('hex')}`;
  const composeDatabase = service('coordinator').environment!.POSTGRES_DB!;
  const daemonUrl = new URL(service('projector').environment!.DATABASE_URL!);
  const daemon = { user: decodeURIComponent(daemonUrl.username), password: decodeURIComponent(daemonUrl.password) };
  const datasource = postgresDatasource(service('grafana'));
  const grafana = { user: datasource.user, password: datasource.secureJsonData.password };
  /** The login users this file created (not there before): dropped after it. */
  const ours: string[] = [];
  let db: Kysely<DB>;
  let url: string;

  /** Runs the add-workers service's psql command line against the test cluster's nodes and database. */
  async function addWorkers(): Promise<void> {
    const nodes = nodeUrls();
    const onTestCluster = (arg: string) => {
      let mapped = arg.replace(`:5432/${composeDatabase}`, `:5432/${database}`);
      for (const [name, nodeUrl] of Object.entries(nodes)) {
        const { hostname, port } = new URL(nodeUrl);
        mapped = mapped.replaceAll(`@${name}:5432/`, `@${hostname}:${port}/`).replaceAll(`'${name}', 5432)`, `'${hostname}', ${port})`);
      }
      return mapped;
    };
    const [program, ...args] = commandLine(service('add-workers'));
    expect(program).toBe('psql');
    await run(path.join(POSTGRES_BIN, 'psql'), args.map(onTestCluster), { env: { PATH: process.env.PATH } });
  }

  async function workerRoles(workerUrl: string): Promise<{ name: string; login: boolean; memberOf: string[] }[]> {
    return withClient(databaseUrl(workerUrl, database), async (client) => {
      const { rows } = await client.query(
        `SELECT r.rolname AS name, r.rolcanlogin AS login,
           array(SELECT g.rolname::text FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid WHERE m.member = r.oid ORDER BY 1) AS "memberOf"
         FROM pg_roles r WHERE r.rolname = ANY ($1) ORDER BY r.rolname`,
        [[daemon.user, grafana.user]],
      );
      return rows;
    });
  }

  let rolesOnWorkersOnceAdded: Awaited<ReturnType<typeof workerRoles>>[] = [];

  beforeAll(async () => {
    const nodes = Object.values(nodeUrls());
    // What the image does on each node's new volume: the database, and Citus created in it.
    for (const nodeUrl of nodes) {
      await withClient(nodeUrl, (admin) => admin.query(`CREATE DATABASE ${database}`));
      await withClient(databaseUrl(nodeUrl, database), (client) => client.query('CREATE EXTENSION citus'));
    }
    url = databaseUrl(cluster().coordinatorUrl, database);
    db = openDatabase({ connectionString: url, applicationName: 'os-audit-compose-test' });
    await withClient(url, async (coordinator) => {
      for (const user of [daemon.user, grafana.user]) {
        const { rows } = await coordinator.query('SELECT FROM pg_roles WHERE rolname = $1', [user]);
        if (rows.length === 0) ours.push(user);
      }
      // Then the login users' scripts, on the coordinator alone, before any worker is known.
      for (const script of coordinatorInitScripts()) await coordinator.query(script);
    });
    await addWorkers();
    rolesOnWorkersOnceAdded = await Promise.all(cluster().workerUrls.map(workerRoles));
  });

  afterAll(async () => {
    await db?.destroy();
    if (url !== undefined) {
      // Dropped on the coordinator, which drops them on the workers too.
      const admin = openDatabase({ connectionString: url, applicationName: 'os-audit-compose-test' });
      try {
        for (const user of ours) await dropLoginUser(admin, user);
      } finally {
        await admin.destroy();
      }
    }
    for (const nodeUrl of [cluster().coordinatorUrl, ...cluster().workerUrls]) {
      for (const user of ours) await withClient(nodeUrl, (admin) => admin.query(`DROP ROLE IF EXISTS ${user}`));
      await dropDatabase(nodeUrl, database);
    }
  });

  it("mounts every login users' script of deploy/postgres/init on the coordinator", () => {
    const folder = path.dirname(hostPathOf(service('coordinator'), '/docker-entrypoint-initdb.d/10-os-audit-logins.sql')!);
    expect(coordinatorInitScripts()).toHaveLength(readdirSync(folder).filter((file) => file.endsWith('.sql')).length);
  });

  it("puts the coordinator's login users on every worker when add-workers adds it, members of their groups", () => {
    for (const roles of rolesOnWorkersOnceAdded) {
      expect(roles).toEqual([
        { name: daemon.user, login: true, memberOf: ['os_audit_projector'] },
        { name: grafana.user, login: true, memberOf: ['os_audit_reader'] },
      ]);
    }
  });

  it('registers the coordinator and the workers, and changes nothing when it runs again (at the next up)', async () => {
    const nodes = sql<{ port: number; role: string }>`SELECT nodeport AS port, noderole::text AS role FROM pg_dist_node WHERE isactive ORDER BY nodeport`;
    const before = (await nodes.execute(db)).rows;
    expect(before.map((node) => node.port).sort()).toEqual(Object.values(nodeUrls()).map((nodeUrl) => Number(new URL(nodeUrl).port)).sort());
    await addWorkers();
    expect((await nodes.execute(db)).rows).toEqual(before);
  });

  it('lets migrate distribute the store, and the projector fold as the compose projector user', async () => {
    await migrateToLatest(db);
    const { rows } = await sql<{ table_name: string }>`
      SELECT table_name::text FROM citus_tables WHERE table_name::text IN ('sessions', 'session_events', 'os_snapshots') ORDER BY 1`.execute(db);
    expect(rows.map((row) => row.table_name)).toEqual(['os_snapshots', 'session_events', 'sessions']);

    // Imported through the coordinator as the superuser, as the compose file's header says.
    const log = path.join(tempDir(), 'compose-suspended.jsonl');
    writeFileSync(log, [exampleEvent('tool_gated'), exampleEvent('suspended')].map((event, seq) => `${JSON.stringify({ seq, event })}\n`).join(''));
    expect((await importLogs(new EventStore(db), log)).newEvents).toBe(2);
    const daemonDb = openDatabase({ connectionString: connectionUrlAs(url, daemon.user, daemon.password), applicationName: 'os-audit-compose-test' });
    try {
      expect((await osSnapshotProjector(daemonDb).catchUp()).eventsApplied).toBe(2);
    } finally {
      await daemonDb.destroy();
    }
    const snapshot = await sql<{ tool_gated_count: number; last_suspend_seq: number }>`
      SELECT tool_gated_count, last_suspend_seq FROM os_snapshots WHERE session_id = 'compose-suspended'`.execute(db);
    expect(snapshot.rows).toEqual([{ tool_gated_count: 1, last_suspend_seq: 1 }]);
  });

  it("lets Grafana's user read every panel, and never an event's payload", async () => {
    const { rows } = await sql<{ now: Date }>`SELECT now() AS now`.execute(db);
    const now = rows[0]!.now.getTime();
    const context = { from: new Date(now - 3_600_000), to: new Date(now + 3_600_000), interval: '1m' };
    const refused: string[] = [];
    await withClient(connectionUrlAs(url, grafana.user, grafana.password), async (client) => {
      for (const { panel, rawSql } of panelQueries(readDashboard())) {
        const outcome = await client.query(expandGrafanaMacros(rawSql, context)).then(
          () => undefined,
          (error: Error) => error.message,
        );
        if (outcome !== undefined) refused.push(`${panel.title}: ${outcome}`);
      }
      // On the workers the views read the shards as this user: it has the columns they show, not the events' bodies.
      await expect(client.query('SELECT payload FROM session_events LIMIT 1')).rejects.toThrow(/permission denied for table session_events/);
    });
    expect(refused).toEqual([]);
  });
});
