import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtInProjections } from '../../projections/index.js';
import type { DB } from '../../src/db/schema.js';
import { parseJson } from '../../src/json/parse-json.js';
import type { JsonObject, JsonValue } from '../../src/json/json-value.js';
import { Projector } from '../../src/projector/projector.js';
import { migrateToLatest } from '../../src/migrate-to-latest.js';
import { gatedToolsProjection } from '../support/gated-tools-projection.js';
import { verifyProjection } from '../../src/projector/verify-projection.js';
import { EventStore } from '../../src/store/event-store.js';
import { type CitusCluster, startCitusCluster } from '../support/citus-cluster.js';
import { citusTestCluster, citusTestsRun, useCitusDatabase } from '../support/citus-database.js';
import { createCitusScratchDatabase } from '../support/citus-scratch-database.js';
import { writeCorpusStream } from '../support/corpus-stream.js';
import { pollUntil } from '../support/daemon-process.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { createScratchDatabase, databaseUrl, dropDatabase, type ScratchDatabase, withClient } from '../support/scratch-database.js';

const folder = mkdtempSync(path.join(tmpdir(), 'os-audit-citus-projector-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** The size of the large catch-up: a million events, as the issue asks (smaller by hand, to try a change). */
const CATCH_UP_EVENTS = Number(process.env.OS_AUDIT_CITUS_CATCH_UP_EVENTS ?? 1_000_000);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every projection's backlog, as `os_projection_lag` counts it (by seq, on Citus). */
async function backlog(db: Kysely<DB>): Promise<number> {
  const { rows } = await sql<{ events: number }>`SELECT coalesce(sum(lag_events), 0)::int AS events FROM os_projection_lag`.execute(db);
  return rows[0]!.events;
}

async function waitForNoBacklog(db: Kysely<DB>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await backlog(db)) > 0) {
    if (Date.now() > deadline) throw new Error(`the projectors still had ${await backlog(db)} events to fold after ${timeoutMs} ms`);
    await sleep(100);
  }
}

/** Verifies every session of every built-in projection: none differs from its log, none is left unprojected. */
async function expectEveryProjectionEqualsItsLog(db: Kysely<DB>): Promise<void> {
  for (const projection of builtInProjections) {
    const report = await verifyProjection(db, projection, { all: true });
    expect(report.mismatches, projection.name).toEqual([]);
    expect(report.pending, projection.name).toEqual([]);
    expect(report.checked).toBeGreaterThan(0);
  }
}

/** Each session's snapshot JSON in the projection's snapshot view. */
async function snapshotsOf(db: Kysely<DB>, view: string): Promise<Map<string, JsonValue>> {
  const { rows } = await sql<{ session_id: string; snapshot: string }>`SELECT session_id, snapshot::text AS snapshot FROM ${sql.table(view)}`.execute(db);
  return new Map(rows.map((row) => [row.session_id, parseJson(row.snapshot)]));
}

/** Appends `appends` batches of three events to sessions `PREFIX-0..sessions-1` in turn, again after a failure, and returns how many it stored. */
async function writer(store: EventStore, prefix: string, sessions: number, appends: number): Promise<number> {
  let stored = 0;
  for (let i = 0; i < appends; i++) {
    const sessionId = `${prefix}-${i % sessions}`;
    const events: JsonObject[] = [
      { kind: 'tool_gated', turn: i, tool: `tool-${i % 5}` },
      { kind: 'signal_disposed', turn: i, signal_id: `signal-${i}`, disposition: 'delivered', queue_depth: i % 3 },
      { kind: 'agent_process_changed', turn: i, agent_id: `agent-${i % 4}`, state: i % 2 ? 'running' : 'waiting' },
    ];
    for (;;) {
      try {
        await store.append(sessionId, events);
        stored += events.length;
        break;
      } catch {
        // A worker down: the append is refused whole; the runtime would try again.
        await sleep(100);
      }
    }
  }
  return stored;
}

describe.runIf(citusTestsRun)('the projector on Citus', () => {
  describe('under concurrent writers on both workers, a stream import in flight and a worker restarted under it', () => {
    // A cluster of its own: its worker is stopped. It commits durably (the harness's default is
    // synchronous_commit off): a worker stopped at once would lose commits it had acknowledged.
    let cluster: CitusCluster | undefined;
    let scratch: ScratchDatabase | undefined;
    beforeAll(async () => {
      cluster = await startCitusCluster({ workers: 2, settings: { synchronous_commit: 'on' } });
      scratch = await createCitusScratchDatabase(cluster);
    });
    afterAll(async () => {
      await scratch?.drop();
      await cluster?.stop();
    });

    it('folds every event exactly once: every session equals the in-memory fold of its log', { timeout: 300_000 }, async () => {
      const db = scratch!.db;
      const abort = new AbortController();
      const errors: string[] = [];
      const daemons = builtInProjections.map((projection) =>
        new Projector(db, projection, {
          pollIntervalMs: 200,
          leaseTtlMs: 3000,
          listenUrl: scratch!.url,
          onEvent: (event) => event.type === 'retry' && errors.push(event.error.message),
        }).run(abort.signal),
      );
      const stream = path.join(folder, 'in-flight.jsonl');
      const corpus = await writeCorpusStream(stream, { seed: 'citus in flight', prefix: 'flight', events: 20_000, projections: [] });
      const importing = (async () => {
        for (;;) {
          const run = await runCliInProcess(['import', stream], { env: { DATABASE_URL: scratch!.url } });
          if (run.code === 0) return run.stdout;
          await sleep(200);
        }
      })();
      const store = new EventStore(db, { connectionRetry: false });
      const writers = Array.from({ length: 4 }, (_, w) => writer(store, `writer-${w}`, 10, 60));
      await sleep(1500);
      const worker = cluster!.workers[0]!;
      await worker.stop('immediate');
      await sleep(2000);
      await worker.start();
      const written = (await Promise.all(writers)).reduce((sum, n) => sum + n, 0);
      expect(await importing).toContain(`imported ${corpus.events} new events`);
      expect(written).toBe(4 * 60 * 3);

      await waitForNoBacklog(db, 120_000);
      abort.abort();
      await Promise.all(daemons);
      // The daemons saw the worker go, and carried on.
      expect(errors.some((message) => message.includes(`${worker.port}`))).toBe(true);

      const { rows } = await sql<{ projection: string; events_applied: number }>`
        SELECT projection, events_applied::int FROM projection_checkpoints ORDER BY projection`.execute(db);
      for (const row of rows) expect(row.events_applied, row.projection).toBe(corpus.events + written);
      await expectEveryProjectionEqualsItsLog(db);
    });
  });

  describe('shards moved by the rebalancer under the daemon and the writers', () => {
    const testDb = useCitusDatabase();

    it('folds every event exactly once wherever its shard goes', async () => {
      const db = testDb.db;
      const abort = new AbortController();
      const daemons = builtInProjections.map((projection) => new Projector(db, projection, { pollIntervalMs: 100, listenUrl: testDb.url }).run(abort.signal));
      const store = new EventStore(db);
      const writing = Promise.all(Array.from({ length: 3 }, (_, w) => writer(store, `moved-${w}`, 16, 60)));
      // Every shard group of the store goes to the other worker, one after another, writes blocked only while each moves.
      const { rows: shards } = await sql<{ shardid: string; nodename: string; nodeport: number }>`
        SELECT shardid::text, nodename, nodeport FROM citus_shards WHERE table_name = 'session_events'::regclass ORDER BY shardid`.execute(db);
      const ports = [...new Set(shards.map((shard) => shard.nodeport))];
      expect(ports).toHaveLength(2);
      for (const shard of shards.slice(0, 4)) {
        const target = ports.find((port) => port !== shard.nodeport)!;
        await sql`SELECT citus_move_shard_placement(${shard.shardid}::bigint, ${shard.nodename}, ${shard.nodeport}, ${shard.nodename}, ${target}, shard_transfer_mode => 'block_writes')`.execute(db);
      }
      const written = (await writing).reduce((sum, n) => sum + n, 0);
      await waitForNoBacklog(db, 60_000);
      abort.abort();
      await Promise.all(daemons);

      const { rows: after } = await sql<{ shardid: string; nodeport: number }>`
        SELECT shardid::text, nodeport FROM citus_shards WHERE table_name = 'session_events'::regclass ORDER BY shardid`.execute(db);
      expect(after.slice(0, 4).map((shard) => shard.nodeport)).toEqual(shards.slice(0, 4).map((shard) => ports.find((port) => port !== shard.nodeport)));
      const { rows } = await sql<{ events_applied: number }>`SELECT events_applied::int FROM projection_checkpoints`.execute(db);
      for (const row of rows) expect(row.events_applied).toBe(written);
      await expectEveryProjectionEqualsItsLog(db);
    });
  });

  describe('a node added and the shards rebalanced onto it under the daemon and the writers', () => {
    // A cluster of its own with a third worker that the database does not know yet.
    let cluster: CitusCluster | undefined;
    let scratch: ScratchDatabase | undefined;
    let addedUrl: string | undefined;
    beforeAll(async () => {
      cluster = await startCitusCluster({ workers: 3 });
      const [first, second, added] = cluster.workerUrls as [string, string, string];
      scratch = await createCitusScratchDatabase({ coordinatorUrl: cluster.coordinatorUrl, workerUrls: [first, second] }, { migrate: false });
      // Fewer shards than Citus's 32, so that the rebalance moves a few shard groups, not dozens.
      await withClient(scratch.url, (client) => client.query(`ALTER DATABASE ${scratch!.name} SET citus.shard_count = 8`));
      await migrateToLatest(scratch.db);
      // As a user prepares a new machine: the database and the extension, before citus_add_node.
      await withClient(added, (admin) => admin.query(`CREATE DATABASE ${scratch!.name}`));
      addedUrl = databaseUrl(added, scratch.name);
      await withClient(addedUrl, (client) => client.query('CREATE EXTENSION citus'));
    });
    afterAll(async () => {
      await scratch?.drop();
      if (addedUrl !== undefined) await dropDatabase(cluster!.workerUrls[2]!, scratch!.name);
      await cluster?.stop();
    });

    it('folds every event exactly once, before, during and after the move onto the new node', { timeout: 300_000 }, async () => {
      const db = scratch!.db;
      const added = cluster!.workers[2]!;
      const abort = new AbortController();
      const daemons = builtInProjections.map((projection) => new Projector(db, projection, { pollIntervalMs: 100, listenUrl: scratch!.url }).run(abort.signal));
      const store = new EventStore(db);
      const before = await writer(store, 'before', 16, 30);
      const during = Promise.all(Array.from({ length: 3 }, (_, w) => writer(store, `during-${w}`, 16, 60)));
      await sql`SELECT citus_add_node('127.0.0.1', ${added.port})`.execute(db);
      await sql`SELECT rebalance_table_shards(shard_transfer_mode => 'block_writes')`.execute(db);
      const written = before + (await during).reduce((sum, n) => sum + n, 0);

      const { rows: placed } = await sql<{ shardid: string }>`
        SELECT shardid::text FROM citus_shards WHERE table_name = 'session_events'::regclass AND nodeport = ${added.port}`.execute(db);
      expect(placed.length).toBeGreaterThan(0);
      // Sessions whose shards now live on the new node take new events and are folded there.
      const after = await writer(store, 'before', 16, 30);
      await waitForNoBacklog(db, 60_000);
      abort.abort();
      await Promise.all(daemons);

      const { rows: onAdded } = await sql<{ events: number }>`
        SELECT count(*)::int AS events FROM session_events
        WHERE get_shard_id_for_distribution_column('session_events', session_id) = ANY (${placed.map((shard) => shard.shardid)}::bigint[])`.execute(db);
      expect(onAdded[0]!.events).toBeGreaterThan(0);
      const { rows } = await sql<{ events_applied: number }>`SELECT events_applied::int FROM projection_checkpoints`.execute(db);
      for (const row of rows) expect(row.events_applied).toBe(written + after);
      await expectEveryProjectionEqualsItsLog(db);
    });
  });

  describe("a projection whose SQL fails on one session's events", () => {
    const testDb = useCitusDatabase();

    it('stops that session alone (reason failed) and folds every other', async () => {
      const db = testDb.db;
      await migrateToLatest(db, [...builtInProjections, gatedToolsProjection]);
      const store = new EventStore(db);
      for (let s = 0; s < 12; s++) {
        await store.append(`gates-${s}`, [
          { kind: 'tool_gated', turn: 1, tool: 'read' },
          { kind: 'tool_gated', turn: 2, tool: s === 7 ? 'boom' : 'write' },
          { kind: 'tool_gated', turn: 3, tool: 'read' },
        ]);
      }
      const report = await new Projector(db, gatedToolsProjection, { pollIntervalMs: 50 }).catchUp();
      expect(report.stopped).toBe(1);
      const { rows } = await sql<{ session_id: string; seq: number; reason: string; problem: string }>`
        SELECT session_id, seq::int, reason, problem FROM projection_blocked_sessions WHERE projection = 'gated_tools'`.execute(db);
      expect(rows).toEqual([
        { session_id: 'gates-7', seq: 0, reason: 'failed', problem: expect.stringContaining("the projection's SQL failed on the events of this session") },
      ]);
      const report2 = await verifyProjection(db, gatedToolsProjection, { all: true });
      expect(report2.mismatches.map((mismatch) => mismatch.sessionId)).toEqual(['gates-7']);
      expect(report2.checked).toBe(12);
    });
  });

  describe('three daemons', () => {
    const testDb = useCitusDatabase();

    it('one leads at a time; the others take over when it stops; every event is folded once', async () => {
      const db = testDb.db;
      const store = new EventStore(db);
      const controllers = [0, 1, 2].map(() => new AbortController());
      const leaders: string[] = [];
      const daemons = controllers.map((controller, d) =>
        Promise.all(
          builtInProjections.map((projection) =>
            new Projector(db, projection, {
              owner: `daemon-${d}`,
              pollIntervalMs: 100,
              leaseTtlMs: 1500,
              listenUrl: testDb.url,
              onEvent: (event) => event.type === 'leader' && leaders.push(`${projection.name}:${event.owner}`),
            }).run(controller.signal),
          ),
        ),
      );
      const writing = Promise.all(Array.from({ length: 3 }, (_, w) => writer(store, `three-${w}`, 8, 80)));
      await sleep(1500);
      // The first leader stops; another takes over within the lease's time.
      const first = leaders[0]!.split(':')[1]!;
      controllers[Number(first.split('-')[1])]!.abort();
      // Waited for, not only checked at the end: writers done early leave no backlog to wait on.
      await pollUntil('another daemon to take the lease over', async () => leaders.some((leader) => !leader.endsWith(first)), { timeoutMs: 15_000, intervalMs: 50 });
      const written = (await writing).reduce((sum, n) => sum + n, 0);
      await waitForNoBacklog(db, 60_000);
      for (const controller of controllers) controller.abort();
      await Promise.all(daemons);

      expect(new Set(leaders.filter((leader) => !leader.endsWith(first))).size).toBeGreaterThan(0);
      const { rows } = await sql<{ events_applied: number }>`SELECT events_applied::int FROM projection_checkpoints`.execute(db);
      for (const row of rows) expect(row.events_applied).toBe(written);
      await expectEveryProjectionEqualsItsLog(db);
    });
  });

  describe(`a catch-up of ${CATCH_UP_EVENTS.toLocaleString('en')} events`, () => {
    const testDb = useCitusDatabase();
    let single: ScratchDatabase | undefined;
    beforeAll(async () => {
      // The single-node result to compare with: a plain database (no Citus) on the coordinator's server.
      single = await createScratchDatabase(citusTestCluster().coordinatorUrl);
    });
    afterAll(async () => {
      await single?.drop();
    });

    it('equals the in-memory fold of every session, and the single-node result', { timeout: 30 * 60_000 }, async () => {
      const stream = path.join(folder, 'catch-up.jsonl');
      const corpus = await writeCorpusStream(stream, { seed: 'citus catch-up', prefix: 'cu', events: CATCH_UP_EVENTS, projections: builtInProjections });
      for (const url of [testDb.url, single!.url]) {
        const imported = await runCliInProcess(['import', stream], { env: { DATABASE_URL: url } });
        expect(imported.stdout, imported.stderr).toContain(`imported ${corpus.events} new events`);
        const projected = await runCliInProcess(['project', '--once'], { env: { DATABASE_URL: url } });
        expect(projected.code, projected.stderr).toBe(0);
        for (const projection of builtInProjections) expect(projected.stdout).toContain(`${projection.name}: projected ${corpus.events} events`);
      }
      for (const projection of builtInProjections) {
        const onCitus = await snapshotsOf(testDb.db, projection.snapshotView);
        expect(onCitus.size).toBe(corpus.sessions);
        expect(onCitus).toEqual(corpus.folds.get(projection.name));
        expect(onCitus).toEqual(await snapshotsOf(single!.db, projection.snapshotView));
      }
    });
  });
});
