import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { freePort } from '../../src/db/local-postgres.js';
import { databaseUrl as databaseUrlOf } from './scratch-database.js';
import { findCommand } from './system-command.js';

const binary = findCommand('pgbouncer');
const inCi = process.env.CI === 'true';

/**
 * Whether the PgBouncer tests run: with pgbouncer installed, and always under CI=true (where a
 * missing pgbouncer fails them: .ci/run installs it).
 */
export const pgbouncerTestsRun = binary !== undefined || inCi;
if (!pgbouncerTestsRun) console.warn('test/pgbouncer: skipped, pgbouncer is not installed (apt-get install pgbouncer; .ci/run installs it)');

/** A PgBouncer in transaction pooling mode in front of a PostgreSQL server. */
export interface RunningPgBouncer {
  port: number;
  /** `databaseUrl` (a database of the server behind it) as reached through PgBouncer. */
  through(databaseUrl: string): string;
  /** Its clients now (`SHOW CLIENTS` on its admin console), itself not included. */
  clients(): Promise<Array<{ database: string; application_name: string }>>;
  /** Its log so far (stderr). */
  log(): string;
  stop(): Promise<void>;
}

export interface PgBouncerOptions {
  /** Server connections per database and user: few, so that clients share them. Default 2. */
  poolSize?: number;
}

/**
 * Starts pgbouncer (transaction pooling) on a free port in front of the server of `serverUrl`,
 * with every database of that server behind it, and waits until it accepts connections. The
 * login of `serverUrl` is the only user; its password (none with trust auth) is PgBouncer's to
 * log in to the server with. As root, pgbouncer runs as `postgres` (it refuses to run as root).
 */
export async function startPgBouncer(serverUrl: string, options: PgBouncerOptions = {}): Promise<RunningPgBouncer> {
  if (binary === undefined) throw new Error('pgbouncer is not installed: apt-get install pgbouncer (.ci/run installs it)');
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username || 'postgres');
  const password = decodeURIComponent(server.password);
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'os-audit-pgbouncer-'));
  const userlist = path.join(dir, 'userlist.txt');
  const ini = path.join(dir, 'pgbouncer.ini');
  writeFileSync(userlist, `${quoted(user)} ${quoted(password)}\n`, { mode: 0o600 });
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      // Clients log in without a password (the test's); PgBouncer logs in to the server with the one of the userlist.
      'auth_type = trust',
      `auth_file = ${userlist}`,
      'pool_mode = transaction',
      `admin_users = ${user}`,
      `default_pool_size = ${options.poolSize ?? 2}`,
      'max_client_conn = 500',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const [uid, gid] = ['-u', '-g'].map((flag) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' })));
    for (const file of [dir, userlist, ini]) chownSync(file, uid!, gid!);
    chmodSync(dir, 0o700);
  }
  const child = spawn(binary, [...(asRoot ? ['-u', 'postgres'] : []), ini], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const cleanUp = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  const through = (databaseUrl: string) => {
    const url = new URL(databaseUrl);
    [url.hostname, url.port, url.password] = ['127.0.0.1', String(port), ''];
    return url.toString();
  };
  try {
    await waitUntilAccepting(through(serverUrl), child, () => log);
  } catch (error) {
    await cleanUp();
    throw error;
  }
  const clients = async () => {
    const admin = new pg.Client({ connectionString: through(databaseUrlOf(serverUrl, 'pgbouncer')) });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ database: string; application_name: string }>('SHOW CLIENTS');
      return rows.filter((row) => row.database !== 'pgbouncer');
    } finally {
      await admin.end();
    }
  };
  return { port, through, clients, log: () => log, stop: cleanUp };
}

/** A PgBouncer for the calling test file, started before its tests and stopped after them. */
export function usePgBouncer(serverUrl: () => string, options: PgBouncerOptions = {}): RunningPgBouncer {
  const handle = {} as RunningPgBouncer;
  let running: RunningPgBouncer | undefined;
  beforeAll(async () => {
    running = await startPgBouncer(serverUrl(), options);
    Object.assign(handle, running);
  });
  afterAll(async () => {
    await running?.stop();
  });
  return handle;
}

async function waitUntilAccepting(url: string, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = performance.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`pgbouncer exited (${child.exitCode ?? child.signalCode}):\n${log()}`);
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('SELECT 1');
      return;
    } catch (error) {
      if (performance.now() > deadline) throw new Error(`pgbouncer does not accept connections on ${url}: ${(error as Error).message}\n${log()}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      await client.end().catch(() => {});
    }
  }
}

function quoted(text: string): string {
  return `"${text.replaceAll('"', '""')}"`;
}
