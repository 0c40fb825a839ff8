import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

/** The repository's root folder: compose paths are relative to it. */
export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The parts of a compose service the tests read. */
export interface ComposeService {
  image?: string;
  build?: string | { context: string; dockerfile?: string };
  entrypoint?: string[];
  command?: string[];
  environment?: Record<string, string>;
  env_file?: string | string[];
  ports?: string[];
  volumes?: (string | { type: string; source?: string; target: string; read_only?: boolean })[];
  depends_on?: Record<string, { condition: string }>;
  restart?: string;
  init?: boolean;
  healthcheck?: { test: string[]; interval?: string; timeout?: string; retries?: number; start_period?: string };
  networks?: string[] | Record<string, { aliases?: string[] } | null>;
}

export interface ComposeFile {
  /** The project name (without it, compose takes the folder's name). */
  name?: string;
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

/** A host folder or file mounted into a container. */
export interface BindMount {
  /** Absolute host path. */
  source: string;
  target: string;
}

/** Parses a YAML file of the repository (merge keys `<<` on, as compose reads them). */
function readYaml<T>(relativePath: string): T {
  return parse(readFileSync(path.join(REPO_ROOT, relativePath), 'utf8'), { merge: true }) as T;
}

/** A compose file of the repository: `docker-compose.yml` unless another is named. */
export function readComposeFile(file = 'docker-compose.yml'): ComposeFile {
  return readYaml<ComposeFile>(file);
}

/**
 * What a compose file refers to that is not there: bind-mounted files and folders of the
 * repository, named volumes not declared, env files, build contexts and their Dockerfile. Empty
 * when everything is there.
 */
export function missingReferences(compose: ComposeFile): string[] {
  const missing: string[] = [];
  for (const [name, definition] of Object.entries(compose.services)) {
    for (const mount of bindMounts(definition)) if (!existsSync(mount.source)) missing.push(`${name}: ${mount.source}`);
    for (const volume of namedVolumes(definition)) if (!Object.keys(compose.volumes ?? {}).includes(volume)) missing.push(`${name}: volume ${volume}`);
    for (const file of [definition.env_file ?? []].flat()) if (!existsSync(path.join(REPO_ROOT, file))) missing.push(`${name}: ${file}`);
    if (definition.build !== undefined) {
      const build = typeof definition.build === 'string' ? { context: definition.build } : definition.build;
      const context = path.resolve(REPO_ROOT, build.context);
      if (!existsSync(context) || !statSync(context).isDirectory()) missing.push(`${name}: build context ${build.context}`);
      else if (!existsSync(path.join(context, build.dockerfile ?? 'Dockerfile'))) missing.push(`${name}: ${build.dockerfile ?? 'Dockerfile'}`);
    }
  }
  return missing;
}

/** The host ports a compose file publishes (`[ip:]host:container` short syntax). */
export function publishedHostPorts(compose: ComposeFile): number[] {
  return Object.values(compose.services).flatMap((service) =>
    (service.ports ?? []).map((mapping) => {
      const parts = mapping.split(':');
      return Number(parts.at(-2));
    }),
  );
}

/** The other names a service answers to on the compose network (`networks.<net>.aliases`). */
export function networkAliases(service: ComposeService): string[] {
  if (service.networks === undefined || Array.isArray(service.networks)) return [];
  return Object.values(service.networks).flatMap((network) => network?.aliases ?? []);
}

/** A service's command line as the container runs it: its entrypoint, then its command. */
export function commandLine(service: ComposeService): string[] {
  return [...(service.entrypoint ?? []), ...(service.command ?? [])];
}

/** The bind mounts of a service (short `./host:/container[:ro]` and long syntax). */
export function bindMounts(service: ComposeService): BindMount[] {
  const mounts: BindMount[] = [];
  for (const volume of service.volumes ?? []) {
    if (typeof volume === 'string') {
      const [source = '', target = ''] = volume.split(':');
      if (source.startsWith('.') || source.startsWith('/')) mounts.push({ source: path.resolve(REPO_ROOT, source), target });
    } else if (volume.type === 'bind' && volume.source) {
      mounts.push({ source: path.resolve(REPO_ROOT, volume.source), target: volume.target });
    }
  }
  return mounts;
}

/** The names of the named volumes a service mounts. */
export function namedVolumes(service: ComposeService): string[] {
  return (service.volumes ?? []).flatMap((volume) => {
    const source = typeof volume === 'string' ? (volume.split(':')[0] ?? '') : volume.type === 'volume' ? (volume.source ?? '') : '';
    return source && !source.startsWith('.') && !source.startsWith('/') ? [source] : [];
  });
}

/** Where a path seen inside a service's container lives on the host, through its bind mounts. */
export function hostPathOf(service: ComposeService, containerPath: string): string | undefined {
  const mount = bindMounts(service)
    .filter(({ target }) => containerPath === target || containerPath.startsWith(`${target}/`))
    .sort((a, b) => b.target.length - a.target.length)[0];
  return mount && path.join(mount.source, containerPath.slice(mount.target.length));
}

/** A Grafana data source as provisioned (PostgreSQL's with a database, a user and a password). */
export interface ProvisionedDatasource {
  name: string;
  uid: string;
  type: string;
  url: string;
  user?: string;
  jsonData: { database?: string; sslmode?: string; timeInterval?: string };
  secureJsonData?: { password: string };
}

/** Grafana's PostgreSQL data source, as provisioned: the dashboard's SQL panels read through it. */
export interface PostgresDatasource extends ProvisionedDatasource {
  user: string;
  jsonData: { database: string; sslmode?: string };
  secureJsonData: { password: string };
}

export const POSTGRES_DATASOURCE_TYPE = 'grafana-postgresql-datasource';

export interface DashboardProvider {
  name: string;
  type: string;
  folder?: string;
  options: { path: string };
}

/** The data sources provisioned in Grafana's container (every YAML file of the folder). */
export function provisionedDatasources(grafana: ComposeService): ProvisionedDatasource[] {
  return provisioningFiles(grafana, 'datasources').flatMap((file) => parse(readFileSync(file, 'utf8')).datasources as ProvisionedDatasource[]);
}

/** The one PostgreSQL data source provisioned in Grafana's container (the others are Prometheus). */
export function postgresDatasource(grafana: ComposeService): PostgresDatasource {
  const found = provisionedDatasources(grafana).filter((datasource) => datasource.type === POSTGRES_DATASOURCE_TYPE);
  if (found.length !== 1) throw new Error(`expected one ${POSTGRES_DATASOURCE_TYPE} data source, found ${found.length}`);
  return found[0] as PostgresDatasource;
}

export function dashboardProviders(grafana: ComposeService): DashboardProvider[] {
  return provisioningFiles(grafana, 'dashboards').flatMap((file) => parse(readFileSync(file, 'utf8')).providers as DashboardProvider[]);
}

/** The YAML files Grafana reads from `/etc/grafana/provisioning/<kind>`, as the compose file mounts them. */
function provisioningFiles(grafana: ComposeService, kind: 'datasources' | 'dashboards'): string[] {
  const folder = hostPathOf(grafana, `/etc/grafana/provisioning/${kind}`);
  if (!folder) throw new Error(`nothing is mounted at /etc/grafana/provisioning/${kind}`);
  return listYaml(folder);
}

function listYaml(folder: string): string[] {
  return readdirSync(folder)
    .filter((name) => /\.ya?ml$/.test(name))
    .map((name) => path.join(folder, name));
}
