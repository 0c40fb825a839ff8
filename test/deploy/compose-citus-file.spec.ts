import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  bindMounts,
  commandLine,
  type ComposeService,
  hostPathOf,
  missingReferences,
  networkAliases,
  postgresDatasource,
  publishedHostPorts,
  readComposeFile,
  REPO_ROOT,
} from './deploy-files.js';
import { healthCheckOutcomes } from './health-check.js';
import { mountedPrometheusConfig, RULES_FILE } from './prometheus-files.js';

const CITUS_FILE = 'docker-compose.citus.yml';
const citus = readComposeFile(CITUS_FILE);
const single = readComposeFile();
const WORKERS = ['worker-1', 'worker-2'];
const NODES = ['coordinator', ...WORKERS];
/** The script the official Citus image runs first on a new volume: `CREATE EXTENSION citus` in POSTGRES_DB. */
const IMAGE_INIT_SCRIPT = '001-create-citus-extension.sql';
const INIT_FOLDER = '/docker-entrypoint-initdb.d';

const serviceOf = (compose: typeof citus, name: string): ComposeService => {
  const found = compose.services[name];
  if (!found) throw new Error(`no service ${name}`);
  return found;
};
const service = (name: string) => serviceOf(citus, name);
const nodeEnv = () => service('coordinator').environment ?? {};

/** `name:tag` of an image, without a digest. */
function imageTag(image: string | undefined): string | undefined {
  return image?.match(/^[^@]+:v?([^:/@]+)$/)?.[1];
}

describe(CITUS_FILE, () => {
  it('has a coordinator, two workers, their registration, the migration, the projector daemon, Prometheus and Grafana', () => {
    expect(Object.keys(citus.services).sort()).toEqual(['add-workers', 'coordinator', 'grafana', 'migrate', 'projector', 'prometheus', 'worker-1', 'worker-2']);
  });

  it('refers only to files and folders of the repository, and to declared volumes', () => {
    expect(missingReferences(citus)).toEqual([]);
  });

  it("runs beside docker-compose.yml: a project name and host ports of its own, on 127.0.0.1 only", () => {
    expect(citus.name).toMatch(/^[a-z0-9][a-z0-9_-]*$/);
    // docker-compose.yml's project is named after the folder.
    expect(citus.name).not.toBe(single.name ?? path.basename(REPO_ROOT));
    const ports = publishedHostPorts(citus);
    expect(new Set(ports).size).toBe(ports.length);
    for (const port of publishedHostPorts(single)) expect(ports).not.toContain(port);
    for (const definition of Object.values(citus.services)) for (const mapping of definition.ports ?? []) expect(mapping).toMatch(/^127\.0\.0\.1:/);
  });

  it('pins every image to a version, the nodes and their registration to one Citus 13 image', () => {
    for (const [name, definition] of Object.entries(citus.services)) {
      if (definition.build !== undefined) continue;
      expect(imageTag(definition.image), `${name}: ${definition.image}`).toMatch(/^\d+(\.\d+)+/);
    }
    const images = new Set([...NODES, 'add-workers'].map((name) => service(name).image));
    expect([...images]).toHaveLength(1);
    expect([...images][0]).toMatch(/^citusdata\/citus:13\.\d+\.\d+$/);
  });

  it('gives every node the same superuser and database, each its own data volume, healthy only once its init scripts are done', () => {
    const volumes = NODES.map((name) => service(name).volumes?.find((volume) => typeof volume === 'string' && volume.endsWith(':/var/lib/postgresql/data')));
    expect(new Set(volumes).size).toBe(NODES.length);
    for (const name of NODES) {
      const node = service(name);
      expect(node.environment, name).toMatchObject({ POSTGRES_USER: nodeEnv().POSTGRES_USER, POSTGRES_PASSWORD: nodeEnv().POSTGRES_PASSWORD, POSTGRES_DB: nodeEnv().POSTGRES_DB });
      // Citus's own connections between nodes, as the superuser.
      expect(node.environment?.PGPASSWORD, name).toBe(nodeEnv().POSTGRES_PASSWORD);
      expect(node.healthcheck?.test.join(' '), name).toMatch(new RegExp(`pg_isready -h 127\\.0\\.0\\.1 -U ${nodeEnv().POSTGRES_USER} -d ${nodeEnv().POSTGRES_DB}$`));
    }
    expect(nodeEnv().POSTGRES_DB).toBe(single.services.postgres!.environment!.POSTGRES_DB);
  });

  it('publishes the coordinator on 127.0.0.1:5434, checking passwords; the workers publish nothing and trust the compose network', () => {
    expect(service('coordinator').ports).toEqual(['127.0.0.1:5434:5432']);
    expect(service('coordinator').environment?.POSTGRES_HOST_AUTH_METHOD).toBeUndefined();
    for (const name of WORKERS) {
      expect(service(name).ports, name).toBeUndefined();
      expect(service(name).environment?.POSTGRES_HOST_AUTH_METHOD, name).toBe('trust');
    }
  });

  it("runs the login users' init scripts on the coordinator, after the image's own, without hiding it", () => {
    const coordinator = service('coordinator');
    // Mounting a folder at /docker-entrypoint-initdb.d would hide the image's script.
    expect(bindMounts(coordinator).map((mount) => mount.target)).not.toContain(INIT_FOLDER);
    const folder = hostPathOf(single.services.postgres!, INIT_FOLDER)!;
    const scripts = readdirSync(folder).filter((file) => file.endsWith('.sql'));
    expect(scripts.length).toBeGreaterThan(0);
    for (const script of scripts) {
      expect(hostPathOf(coordinator, `${INIT_FOLDER}/${script}`), script).toBe(path.join(folder, script));
      // The entrypoint runs them in the order of their names.
      expect([IMAGE_INIT_SCRIPT, script].sort(), script).toEqual([IMAGE_INIT_SCRIPT, script]);
    }
    for (const name of WORKERS) expect(bindMounts(service(name)), name).toEqual([]);
  });

  it('registers the coordinator and every worker with psql, as the superuser, once all three are healthy', () => {
    const addWorkers = service('add-workers');
    const [program, ...args] = commandLine(addWorkers);
    expect(program).toBe('psql');
    expect(args).toContain('--set=ON_ERROR_STOP=1');
    // Not in one transaction: citus_add_node refuses a transaction block.
    expect(args).not.toContain('--single-transaction');
    const url = new URL(args.find((arg) => arg.startsWith('--dbname='))!.slice('--dbname='.length));
    expect([url.hostname, url.port, decodeURIComponent(url.username), decodeURIComponent(url.password), url.pathname]).toEqual([
      'coordinator',
      '5432',
      nodeEnv().POSTGRES_USER,
      nodeEnv().POSTGRES_PASSWORD,
      `/${nodeEnv().POSTGRES_DB}`,
    ]);
    const commands = args.filter((arg) => arg.startsWith('--command=')).map((arg) => arg.slice('--command='.length));
    expect(commands).toEqual([
      "SELECT citus_set_coordinator_host('coordinator', 5432)",
      ...WORKERS.map((worker) => `SELECT citus_add_node('${worker}', 5432)`),
    ]);
    expect(addWorkers.depends_on).toEqual(Object.fromEntries(NODES.map((name) => [name, { condition: 'service_healthy' }])));
    expect(addWorkers.restart).toBe('no');
  });

  it('migrates once the workers are registered, as the superuser, on the coordinator', () => {
    const migrate = service('migrate');
    expect(migrate.depends_on).toEqual({ 'add-workers': { condition: 'service_completed_successfully' } });
    const url = new URL(migrate.environment?.DATABASE_URL ?? '');
    expect([url.hostname, url.username, url.pathname]).toEqual(['coordinator', nodeEnv().POSTGRES_USER, `/${nodeEnv().POSTGRES_DB}`]);
  });

  it("runs docker-compose.yml's migrate, projector and Grafana, pointed at the coordinator, on ports of their own", () => {
    const onCoordinator = (url: string) => url.replace('@postgres:5432/', '@coordinator:5432/');
    for (const name of ['migrate', 'projector', 'grafana']) {
      const ours = service(name);
      const theirs = serviceOf(single, name);
      expect([ours.image, ours.build, ours.command, ours.restart, ours.init], name).toEqual([theirs.image, theirs.build, theirs.command, theirs.restart, theirs.init]);
      expect(Object.keys(ours.environment ?? {}).sort(), name).toEqual(Object.keys(theirs.environment ?? {}).sort());
      for (const [key, value] of Object.entries(theirs.environment ?? {})) {
        if (key === 'OS_AUDIT_METRICS_PORT') continue;
        expect(ours.environment?.[key], `${name}: ${key}`).toBe(key === 'DATABASE_URL' ? onCoordinator(value) : value);
      }
      if (name !== 'migrate') expect(ours.depends_on, name).toEqual(theirs.depends_on);
    }
    expect(bindMounts(service('grafana'))).toEqual(bindMounts(serviceOf(single, 'grafana')));
    expect(service('grafana').ports).toEqual(['127.0.0.1:3001:3000']);
  });

  it('runs the projector as a login user that is not the superuser, with its metrics port published as itself', () => {
    const projector = service('projector');
    const url = new URL(projector.environment?.DATABASE_URL ?? '');
    expect([url.hostname, url.pathname]).toEqual(['coordinator', `/${nodeEnv().POSTGRES_DB}`]);
    expect(url.username).not.toBe(nodeEnv().POSTGRES_USER);
    const port = projector.environment?.OS_AUDIT_METRICS_PORT;
    expect(port).toBe('9465');
    expect(projector.ports).toEqual([`127.0.0.1:${port}:${port}`]);
    expect(projector.environment?.OS_AUDIT_METRICS_HOST).toBe('0.0.0.0');
    expect(projector.healthcheck?.test.join(' ')).toContain(`http://127.0.0.1:${port}/healthz`);
  });

  it("has the projector's health check pass on 200 and fail on an error status or no answer", async () => {
    const projector = service('projector');
    expect(await healthCheckOutcomes(projector.healthcheck!.test, projector.environment!.OS_AUDIT_METRICS_PORT!)).toEqual([0, 1, 1]);
  });

  it("lets Grafana's data source reach the coordinator by the host name it has in docker-compose.yml", () => {
    const datasource = postgresDatasource(service('grafana'));
    const host = datasource.url.split(':')[0]!;
    expect(single.services[host]).toBeDefined();
    expect(networkAliases(service('coordinator'))).toContain(host);
    expect(datasource.url).toBe(`${host}:5432`);
    expect(datasource.jsonData.database).toBe(nodeEnv().POSTGRES_DB);
  });

  it("runs docker-compose.yml's Prometheus, with the same alerts, scraping this file's projector, on a port of its own", () => {
    const ours = service('prometheus');
    const theirs = serviceOf(single, 'prometheus');
    expect([ours.image, ours.restart, ours.depends_on]).toEqual([theirs.image, theirs.restart, theirs.depends_on]);
    expect(ours.ports).toEqual(['127.0.0.1:9091:9090']);
    const config = mountedPrometheusConfig(ours);
    expect(config.file).toBe(path.join(REPO_ROOT, 'deploy/prometheus/prometheus.citus.yml'));
    expect(config.ruleFiles).toEqual([RULES_FILE]);
    expect(config.targets).toEqual([`projector:${service('projector').environment?.OS_AUDIT_METRICS_PORT}`]);
    // The daemon answers that Host.
    expect(service('projector').environment?.OS_AUDIT_ALLOWED_HOSTS).toBe('projector');
    // The rest as docker-compose.yml's: Grafana's Prometheus data source is the same file.
    const { config: singleConfig } = mountedPrometheusConfig(theirs);
    expect({ ...config.config, scrape_configs: undefined }).toEqual({ ...singleConfig, scrape_configs: undefined });
    expect(bindMounts(ours).map((mount) => mount.target)).toEqual(bindMounts(theirs).map((mount) => mount.target));
  });
});
