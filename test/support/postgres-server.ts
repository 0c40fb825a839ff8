import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startLocalPostgres } from '../../src/db/local-postgres.js';

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
  const dataDir = mkdtempSync(path.join(tmpdir(), 'os-audit-pg-'));
  const server = await startLocalPostgres({ dataDir, settings: { max_connections: '200' } });
  return {
    source: 'embedded',
    adminUrl: server.adminUrl,
    stop: async () => {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
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
