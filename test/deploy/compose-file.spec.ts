import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { allPanels, DASHBOARD_FILE, panelPromQueries, panelQueries, PROMETHEUS_DATASOURCE_TYPE, readDashboard } from './dashboard-panels.js';
import {
  type ComposeService,
  dashboardProviders,
  hostPathOf,
  missingReferences,
  postgresDatasource,
  provisionedDatasources,
  readComposeFile,
  REPO_ROOT,
} from './deploy-files.js';
import { execForm, instructionsOf, isIgnored, parseCopy, readDockerfile, readDockerignore, workdirOf } from './dockerfile.js';
import { healthCheckOutcomes } from './health-check.js';
import { mountedPrometheusConfig, RULES_FILE } from './prometheus-files.js';

const compose = readComposeFile();
const service = (name: string): ComposeService => {
  const found = compose.services[name];
  if (!found) throw new Error(`no service ${name}`);
  return found;
};
const postgresEnv = () => service('postgres').environment ?? {};

describe('docker-compose.yml', () => {
  it('has the database, the migration, the projector daemon, Prometheus and Grafana', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['grafana', 'migrate', 'postgres', 'projector', 'prometheus']);
  });

  it('refers only to files and folders of the repository, and to declared volumes', () => {
    expect(missingReferences(compose)).toEqual([]);
  });

  it('keeps the PostgreSQL server on 127.0.0.1:5433, healthy only once the init scripts are done', () => {
    const postgres = service('postgres');
    expect(postgres.image).toMatch(/^postgres:17/);
    expect(postgres.ports).toEqual(['127.0.0.1:5433:5432']);
    expect(postgres.healthcheck?.test.join(' ')).toMatch(/pg_isready -h 127\.0\.0\.1 /);
    const init = hostPathOf(postgres, '/docker-entrypoint-initdb.d');
    expect(init).toBeDefined();
    expect(readdirSync(init!).filter((file) => file.endsWith('.sql')).length).toBeGreaterThan(0);
  });

  it('migrates once, as the superuser, when the server is healthy', () => {
    const migrate = service('migrate');
    expect(migrate.command).toEqual(['migrate']);
    expect(migrate.restart).toBe('no');
    expect(migrate.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    const url = new URL(migrate.environment?.DATABASE_URL ?? '');
    expect([url.hostname, url.username, url.pathname]).toEqual(['postgres', postgresEnv().POSTGRES_USER, `/${postgresEnv().POSTGRES_DB}`]);
  });

  it('runs the projector from the same image, after the migration, as a login user that is not the superuser', () => {
    const projector = service('projector');
    const migrate = service('migrate');
    expect([projector.build, projector.image]).toEqual([migrate.build, migrate.image]);
    // Published on the host's loopback only: no token.
    expect(projector.command).toEqual(['project', '--insecure-no-auth']);
    expect(projector.restart).toBe('unless-stopped');
    expect(projector.depends_on).toEqual({ migrate: { condition: 'service_completed_successfully' } });
    const url = new URL(projector.environment?.DATABASE_URL ?? '');
    expect([url.hostname, url.pathname]).toEqual(['postgres', `/${postgresEnv().POSTGRES_DB}`]);
    expect(url.username).not.toBe(postgresEnv().POSTGRES_USER);
  });

  it("checks the projector's health on /healthz of its metrics port, and publishes the port", () => {
    const projector = service('projector');
    const port = projector.environment?.OS_AUDIT_METRICS_PORT;
    expect(port).toBe('9464');
    expect(projector.healthcheck?.test.join(' ')).toContain(`http://127.0.0.1:${port}/healthz`);
    // Published to the host: the server must listen on the container's every interface.
    expect(projector.ports).toContain(`127.0.0.1:${port}:${port}`);
    expect(projector.environment?.OS_AUDIT_METRICS_HOST).toBe('0.0.0.0');
  });

  it('has a health check command that passes on 200 and fails on an error status or no answer', async () => {
    const projector = service('projector');
    expect(await healthCheckOutcomes(projector.healthcheck!.test, projector.environment!.OS_AUDIT_METRICS_PORT!)).toEqual([0, 1, 1]);
  });

  it("runs Prometheus on 127.0.0.1:9090 with the shipped alerts, scraping the projector's metrics port", () => {
    const prometheus = service('prometheus');
    expect(prometheus.image).toMatch(/^prom\/prometheus:v\d+\.\d+\.\d+$/);
    expect(prometheus.ports).toEqual(['127.0.0.1:9090:9090']);
    // Independent of the projector: with it down, the alert on no daemon fires.
    expect(prometheus.depends_on).toBeUndefined();
    expect(prometheus.restart).toBe('unless-stopped');
    const fileMounts = (prometheus.volumes ?? []).filter((volume): volume is string => typeof volume === 'string' && volume.startsWith('./'));
    expect(fileMounts).toHaveLength(2);
    for (const mount of fileMounts) expect(mount).toMatch(/:ro$/);
    const { file, ruleFiles, targets } = mountedPrometheusConfig(prometheus);
    expect(file).toBe(path.join(REPO_ROOT, 'deploy/prometheus/prometheus.yml'));
    expect(ruleFiles).toEqual([RULES_FILE]);
    expect(targets).toEqual([`projector:${service('projector').environment?.OS_AUDIT_METRICS_PORT}`]);
    // The daemon answers that Host.
    expect(service('projector').environment?.OS_AUDIT_ALLOWED_HOSTS).toBe('projector');
  });

  it('serves Grafana on 127.0.0.1:3000 once the schema is there', () => {
    const grafana = service('grafana');
    expect(grafana.image).toMatch(/^grafana\/grafana:\d/);
    expect(grafana.ports).toEqual(['127.0.0.1:3000:3000']);
    expect(grafana.depends_on).toEqual({ migrate: { condition: 'service_completed_successfully' } });
  });
});

describe('Grafana provisioning', () => {
  const grafana = service('grafana');

  it('has one PostgreSQL data source: the compose database, read as a user that is not the superuser', () => {
    const datasource = postgresDatasource(grafana);
    expect(datasource).toMatchObject({ url: 'postgres:5432', jsonData: { database: postgresEnv().POSTGRES_DB } });
    expect(datasource.uid).toMatch(/^[A-Za-z0-9_-]{1,40}$/);
    expect(datasource.user).not.toBe(postgresEnv().POSTGRES_USER);
    expect(datasource.secureJsonData.password).toBeTruthy();
  });

  it("and one Prometheus data source: the compose Prometheus, its scrape interval Grafana's smallest step", () => {
    const datasources = provisionedDatasources(grafana);
    expect(datasources.map((datasource) => datasource.type).sort()).toEqual([postgresDatasource(grafana).type, PROMETHEUS_DATASOURCE_TYPE]);
    const prometheus = datasources.find((datasource) => datasource.type === PROMETHEUS_DATASOURCE_TYPE)!;
    const port = service('prometheus').ports![0]!.split(':').at(-1);
    expect(prometheus.url).toBe(`http://prometheus:${port}`);
    expect(prometheus.uid).toMatch(/^[A-Za-z0-9_-]{1,40}$/);
    const { config } = mountedPrometheusConfig(service('prometheus'));
    expect(prometheus.jsonData.timeInterval).toBe(config.global?.scrape_interval);
  });

  it('loads the dashboards from the folder that holds the dashboard file', () => {
    const providers = dashboardProviders(grafana);
    expect(providers).toHaveLength(1);
    expect(providers[0]!.type).toBe('file');
    expect(hostPathOf(grafana, providers[0]!.options.path)).toBe(path.dirname(DASHBOARD_FILE));
    expect(hostPathOf(grafana, grafana.environment?.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH ?? '')).toBe(DASHBOARD_FILE);
  });

  it('has a dashboard whose every panel and query uses a provisioned data source: SQL the PostgreSQL one, PromQL the Prometheus one', () => {
    const datasource = postgresDatasource(grafana);
    const prometheus = provisionedDatasources(grafana).find((source) => source.type === PROMETHEUS_DATASOURCE_TYPE)!;
    const dashboard = readDashboard();
    expect(dashboard.uid).toBe('os-audit');
    expect(dashboard.templating?.list ?? []).toEqual([]);
    const panels = [...allPanels(dashboard.panels)];
    expect(new Set(panels.map((panel) => panel.id)).size).toBe(panels.length);
    const queries = panelQueries(dashboard);
    expect(new Set(queries.map((query) => query.format))).toEqual(new Set(['table', 'time_series']));
    for (const { panel, target } of queries) {
      expect(panel.datasource, panel.title).toEqual({ type: datasource.type, uid: datasource.uid });
      expect(target.datasource, panel.title).toEqual({ type: datasource.type, uid: datasource.uid });
    }
    const promQueries = panelPromQueries(dashboard);
    expect(promQueries.length).toBeGreaterThan(0);
    for (const { panel, target } of promQueries) {
      expect(panel.datasource, panel.title).toEqual({ type: prometheus.type, uid: prometheus.uid });
      expect(target.datasource, panel.title).toEqual({ type: prometheus.type, uid: prometheus.uid });
    }
    // Every panel but the rows has queries, of one kind or the other.
    const titles = [...queries, ...promQueries].map(({ panel }) => panel.title);
    for (const panel of panels) if (panel.type !== 'row') expect(titles, panel.title).toContain(panel.title);
  });
});

describe('Dockerfile', () => {
  const stages = readDockerfile();
  const build = stages[0]!;
  const runtime = stages.at(-1)!;
  const ignorePatterns = readDockerignore();
  const packageJson = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };

  it('builds in one Node 20 stage and runs in another', () => {
    expect(stages).toHaveLength(2);
    for (const stage of stages) expect(stage.image).toMatch(/^node:20(-|$)/);
    expect(build.name).toBeTruthy();
  });

  it('copies from the context only files that exist and that .dockerignore lets in', () => {
    const copies = stages.flatMap((stage) => instructionsOf(stage, 'COPY').map(parseCopy)).filter((copy) => copy.from === undefined);
    expect(copies.length).toBeGreaterThan(0);
    for (const { sources } of copies) {
      for (const source of sources) {
        expect(existsSync(path.join(REPO_ROOT, source)), source).toBe(true);
        expect(isIgnored(ignorePatterns, source), `${source} is left out by .dockerignore`).toBe(false);
      }
    }
  });

  it('copies everything the build compiles into the build stage', () => {
    const copied = instructionsOf(build, 'COPY').flatMap((instruction) => parseCopy(instruction).sources);
    const buildConfig = JSON.parse(readFileSync(path.join(REPO_ROOT, 'tsconfig.build.json'), 'utf8')) as { extends: string; include: string[] };
    for (const needed of ['package.json', 'package-lock.json', 'tsconfig.build.json', buildConfig.extends.replace(/^\.\//, ''), ...buildConfig.include]) {
      expect(copied, needed).toContain(needed);
    }
    expect(instructionsOf(build, 'RUN').map((instruction) => instruction.args)).toContain('npm run build');
  });

  it('runs the compiled CLI (the bin of package.json) as a user that is not root, the daemon by default', () => {
    expect(execForm(instructionsOf(runtime, 'ENTRYPOINT')[0]!)).toEqual(['node', packageJson.bin['os-audit']]);
    expect(execForm(instructionsOf(runtime, 'CMD')[0]!)).toEqual(['project']);
    const user = instructionsOf(runtime, 'USER').at(-1)?.args;
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user!.split(':')[0]);
  });

  it('installs only production dependencies in the runtime stage, and copies the build and package.json', () => {
    const install = instructionsOf(runtime, 'RUN').find((instruction) => instruction.args.startsWith('npm ci'));
    expect(install?.args).toMatch(/^npm ci (?=.*--omit=dev)(?=.*--ignore-scripts)/);
    const copies = instructionsOf(runtime, 'COPY').map(parseCopy);
    expect(copies).toContainEqual({ from: build.name, sources: [path.posix.join(workdirOf(build), 'dist')], destination: './dist' });
    // run-cli.ts reads the version from package.json next to dist/.
    expect(copies.some((copy) => copy.from === undefined && copy.sources.includes('package.json'))).toBe(true);
  });

  it('keeps local state out of the build context', () => {
    for (const local of ['node_modules', 'node_modules/pg/package.json', 'dist', '.os-audit', '.git', '.env', 'test', 'deploy']) {
      expect(isIgnored(ignorePatterns, local), local).toBe(true);
    }
  });
});

describe('.dockerignore matching', () => {
  it('lets the last matching pattern decide, for a path and its parent folders', () => {
    const patterns = ['*', '!src', 'src/**/*.spec.ts', '!package.json'];
    expect(isIgnored(patterns, 'src/cli/main.ts')).toBe(false);
    expect(isIgnored(patterns, 'src/cli/main.spec.ts')).toBe(true);
    expect(isIgnored(patterns, 'package.json')).toBe(false);
    expect(isIgnored(patterns, 'package-lock.json')).toBe(true);
    expect(isIgnored(patterns, 'node_modules/x/index.js')).toBe(true);
    expect(isIgnored([], 'anything')).toBe(false);
  });
});
