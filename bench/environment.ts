import { readFileSync } from 'node:fs';
import os from 'node:os';
import pg from 'pg';
import type { PostgresSource } from '../test/support/postgres-server.js';

/** The machine and the server a run measured. */
export interface Environment {
  cpuModel: string;
  cores: number;
  memoryGiB: number;
  os: string;
  node: string;
  postgresSource: PostgresSource;
  postgresVersion: string;
  settings: Record<string, string>;
  /** The 1-minute load average when the run started: other work on the machine skews every figure. */
  loadAverageAtStart: number;
}

/** Server settings that move the figures. */
const SETTINGS = ['shared_buffers', 'synchronous_commit', 'fsync', 'wal_level', 'max_wal_size', 'work_mem', 'max_connections'] as const;

export async function describeEnvironment(serverUrl: string, source: PostgresSource): Promise<Environment> {
  const client = new pg.Client({ connectionString: serverUrl, application_name: 'os-audit-bench' });
  await client.connect();
  try {
    const version = (await client.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version;
    const settings = await readSettings(client);
    return {
      cpuModel: cpuModel(),
      cores: os.cpus().length,
      memoryGiB: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
      os: `${os.type()} ${os.release()} ${os.arch()}`,
      node: process.version,
      postgresSource: source,
      postgresVersion: version,
      settings,
      loadAverageAtStart: Math.round(os.loadavg()[0]! * 100) / 100,
    };
  } finally {
    await client.end();
  }
}

/** The {@link SETTINGS} of the server `client` is connected to. */
export async function readSettings(client: pg.Client): Promise<Record<string, string>> {
  const settings: Record<string, string> = {};
  for (const name of SETTINGS) {
    const { rows } = await client.query<Record<string, string>>(`SHOW ${name}`);
    settings[name] = Object.values(rows[0]!)[0]!;
  }
  return settings;
}

/** `name=value, …`, as the report prints settings. */
export function describeSettings(settings: Record<string, string>): string {
  return Object.entries(settings).map(([k, v]) => `${k}=${v}`).join(', ');
}

function cpuModel(): string {
  const model = os.cpus()[0]?.model?.trim();
  if (model) return model;
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8').split('\n').find((l) => l.startsWith('model name'));
    return line?.split(':')[1]?.trim() ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

export function describeEnvironmentLines(env: Environment): string[] {
  return [
    `machine: ${env.cpuModel}, ${env.cores} cores, ${env.memoryGiB} GiB RAM, ${env.os}`,
    `Node.js ${env.node}; PostgreSQL ${env.postgresVersion} (${sourceName(env.postgresSource)})`,
    `settings: ${describeSettings(env.settings)}`,
    `load average (1 min) at the start: ${env.loadAverageAtStart}`,
  ];
}

export function sourceName(source: PostgresSource): string {
  switch (source) {
    case 'database-url':
      return 'the server of DATABASE_URL';
    case 'testcontainers':
      return 'a testcontainers container';
    case 'embedded':
      return 'an embedded server started by the benchmark';
  }
}
