import os from 'node:os';
import { sql } from 'kysely';
import pg from 'pg';
import { type CitusCluster, startCitusCluster } from '../test/support/citus-cluster.js';
import { createCitusScratchDatabase } from '../test/support/citus-scratch-database.js';
import type { ScratchDatabase } from '../test/support/scratch-database.js';
import { loadRows, probeEventLayout } from './copy-rows.js';
import { CorpusStats, InterleavedCorpus } from './corpus.js';
import { describeSettings, readSettings } from './environment.js';
import { type AppendCorpus, type AppendFigures, type AppendMethod, measureAppends } from './measure-append.js';
import { type CatchUpFigures, measureCatchUp } from './measure-catch-up.js';
import { otherLoad } from './other-load.js';
import { secondsSince } from './stats.js';

/** The cluster's workers: two, as the test harness starts them. */
export const CITUS_WORKERS = 2;

/**
 * Durability as on the single server the figures are set beside (the harness turns it off for
 * tests): every commit on every node waits for its WAL flush, two-phase commit's too.
 */
const DURABLE_SETTINGS = { fsync: 'on', synchronous_commit: 'on', full_page_writes: 'on' } as const;

/** The cluster a run measured. */
export interface CitusEnvironment {
  citusVersion: string;
  postgresVersion: string;
  workers: number;
  shardCount: number;
  /** The settings of each node; one entry when every node has the same. */
  settings: { nodes: string; settings: Record<string, string> }[];
  /** Seconds to initialise and start the three servers. */
  startSeconds: number;
  /** The 1-minute load average when the cluster part started. */
  loadAverageAtStart: number;
}

/** What `--citus` measured on the cluster. */
export interface CitusFigures {
  environment: CitusEnvironment;
  append: AppendFigures;
  catchUp: CatchUpFigures;
  /** Every projection's snapshots on the cluster equal the single server's (md5 of each JSON view). */
  equalsSingleNode: boolean;
}

/** How `run-bench` wraps a step: its time and the other work meanwhile are recorded under `name`. */
export type Phase = <T>(name: string, work: () => Promise<T>) => Promise<T>;

/**
 * The Citus section: the same corpora measured the same way as on the single server, on a local
 * cluster durable as the single server. The cluster is a coordinator and {@link CITUS_WORKERS}
 * workers, each a PostgreSQL 15 server of its own on this machine (`test/support/citus-cluster.ts`).
 * The appends (`methods`, the append corpus) run against COPY into a distributed table. Then the
 * catch-up corpus (its seed again, so the same events) is loaded into a migrated (distributed)
 * database, and its catch-up runs against the set-based limit on the shards.
 * `singleNodeDigest` is the single server's catch-up result, which the cluster's must equal.
 */
export async function measureCitus(options: {
  appendCorpus: AppendCorpus;
  methods: readonly AppendMethod[];
  catchUpSeed: string;
  events: number;
  runs: number;
  cliEntry: string;
  singleNodeDigest: string;
  phase: Phase;
  log: (line: string) => void;
}): Promise<CitusFigures> {
  const { log, phase } = options;
  const loadAverageAtStart = Math.round(os.loadavg()[0]! * 100) / 100;
  const started = performance.now();
  const cluster = await startCitusCluster({ workers: CITUS_WORKERS, settings: DURABLE_SETTINGS });
  const startSeconds = secondsSince(started);
  try {
    log(`\n== citus: a coordinator and ${CITUS_WORKERS} workers on this machine, started in ${startSeconds.toFixed(1)} s`);
    const newDatabase = async (): Promise<ScratchDatabase> => {
      const scratch = await createCitusScratchDatabase(cluster);
      otherLoad.addDatabase(scratch.name);
      return scratch;
    };
    const append = await phase('citus: append: API and import against raw COPY, on the cluster', () =>
      measureAppends(newDatabase, options.appendCorpus, options.methods, options.runs, log, { keepGoing: true }),
    );

    const database = await newDatabase();
    try {
      const environment = await describeCluster(cluster, database, startSeconds, loadAverageAtStart);
      log(`   Citus ${environment.citusVersion}, PostgreSQL ${environment.postgresVersion}, ${environment.shardCount} shards per table; ${environment.settings.map((s) => `${s.nodes}: ${describeSettings(s.settings)}`).join('; ')}`);
      await phase(`citus: catch-up corpus: generate and load ${options.events.toLocaleString('en-US')} events into the cluster`, async () => {
        const corpus = new InterleavedCorpus({ seed: options.catchUpSeed, prefix: 'cu', events: options.events });
        const stats = new CorpusStats();
        await loadRows(database.url, await probeEventLayout(database.db), corpus.rows(), { onRow: (row) => stats.add(row) });
        stats.assertRealistic();
        log(`   corpus: ${stats.describe()}; ${corpus.lastSeqs.size.toLocaleString('en-US')} sessions`);
      });
      const catchUp = await phase('citus: catch-up: os-audit project --once against the set-based limit on the shards', () =>
        measureCatchUp(database.url, database.db, options.events, options.runs, options.cliEntry, log),
      );
      const equalsSingleNode = catchUp.digest === options.singleNodeDigest;
      log(`  the cluster's snapshots ${equalsSingleNode ? 'equal' : 'DIFFER from'} the single server's (md5 of each projection's JSON view)`);
      return { environment, append, catchUp, equalsSingleNode };
    } finally {
      await database.drop();
    }
  } finally {
    await cluster.stop();
  }
}

async function describeCluster(cluster: CitusCluster, database: ScratchDatabase, startSeconds: number, loadAverageAtStart: number): Promise<CitusEnvironment> {
  const { rows } = await sql<{ citus: string; postgres: string; shards: string }>`
    SELECT split_part(citus_version(), ' ', 2) AS citus,
      current_setting('server_version') AS postgres, current_setting('citus.shard_count') AS shards`.execute(database.db);
  const nodes = [
    { name: 'coordinator', url: cluster.coordinatorUrl },
    ...cluster.workerUrls.map((url, i) => ({ name: `worker ${i + 1}`, url })),
  ];
  const settings: CitusEnvironment['settings'] = [];
  for (const node of nodes) {
    const client = new pg.Client({ connectionString: node.url, application_name: 'os-audit-bench' });
    await client.connect();
    try {
      const own = await readSettings(client);
      const same = settings.find((entry) => describeSettings(entry.settings) === describeSettings(own));
      if (same) same.nodes += `, ${node.name}`;
      else settings.push({ nodes: node.name, settings: own });
    } finally {
      await client.end();
    }
  }
  if (settings.length === 1) settings[0]!.nodes = 'each node';
  return {
    citusVersion: rows[0]!.citus,
    postgresVersion: rows[0]!.postgres,
    workers: cluster.workerUrls.length,
    shardCount: Number(rows[0]!.shards),
    settings,
    startSeconds,
    loadAverageAtStart,
  };
}
