import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { ProjectorMetrics } from '../../src/observability/projector-metrics.js';
import { type ComposeService, hostPathOf, REPO_ROOT } from './deploy-files.js';

/** The alert rules the repository ships, and their promtool unit tests. */
export const RULES_FILE = path.join(REPO_ROOT, 'deploy/prometheus/os-audit-rules.yml');
export const RULES_TEST_FILE = path.join(REPO_ROOT, 'deploy/prometheus/os-audit-rules.test.yml');
/** Where the official Prometheus image reads its configuration. */
export const PROMETHEUS_CONFIG_PATH = '/etc/prometheus/prometheus.yml';
/** The scrape job the alerts select (`up{job="os-audit"}`). */
export const SCRAPE_JOB = 'os-audit';

export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** The parts of a Prometheus configuration the tests read. */
export interface PrometheusConfig {
  global?: { scrape_interval?: string; evaluation_interval?: string };
  rule_files?: string[];
  scrape_configs?: { job_name: string; static_configs?: { targets: string[] }[] }[];
}

/** A compose service's Prometheus configuration, as its container sees it. */
export interface MountedPrometheusConfig {
  /** The host file mounted at {@link PROMETHEUS_CONFIG_PATH}. */
  file: string;
  config: PrometheusConfig;
  /** Each rule file's host path, as the container resolves it (relative to the configuration); undefined when not mounted. */
  ruleFiles: (string | undefined)[];
  /** The targets of the job {@link SCRAPE_JOB}. */
  targets: string[];
}

interface RuleTestFile {
  rule_files: string[];
  tests: { alert_rule_test?: { alertname: string; exp_alerts?: unknown[] }[] }[];
}

/** Every alerting rule of a rules file, in its order. */
export function readAlertRules(file = RULES_FILE): AlertRule[] {
  const { groups } = parse(readFileSync(file, 'utf8')) as { groups: { rules: (AlertRule | { record: string })[] }[] };
  return groups.flatMap((group) => group.rules.filter((rule): rule is AlertRule => 'alert' in rule));
}

/** The configuration a compose service's Prometheus reads, with its rule files and scrape targets. */
export function mountedPrometheusConfig(prometheus: ComposeService): MountedPrometheusConfig {
  const file = hostPathOf(prometheus, PROMETHEUS_CONFIG_PATH);
  if (!file) throw new Error(`nothing is mounted at ${PROMETHEUS_CONFIG_PATH}`);
  const config = parse(readFileSync(file, 'utf8')) as PrometheusConfig;
  const ruleFiles = (config.rule_files ?? []).map((rules) => hostPathOf(prometheus, path.posix.resolve(path.posix.dirname(PROMETHEUS_CONFIG_PATH), rules)));
  const job = config.scrape_configs?.find((scrape) => scrape.job_name === SCRAPE_JOB);
  const targets = (job?.static_configs ?? []).flatMap((group) => group.targets);
  return { file, config, ruleFiles, targets };
}

/**
 * The alerts of `rules` that the promtool test file does not test both ways: with a case where
 * it fires and one where it does not. Empty when each is covered.
 */
export function untestedAlerts(rules: readonly AlertRule[], testFile = RULES_TEST_FILE): string[] {
  const { tests } = parse(readFileSync(testFile, 'utf8')) as RuleTestFile;
  const cases = tests.flatMap((test) => test.alert_rule_test ?? []);
  return rules.flatMap(({ alert }) => {
    const outcomes = cases.filter((testCase) => testCase.alertname === alert).map((testCase) => (testCase.exp_alerts ?? []).length > 0);
    return [...(outcomes.includes(true) ? [] : [`${alert}: no case where it fires`]), ...(outcomes.includes(false) ? [] : [`${alert}: no case where it stays quiet`])];
  });
}

/** The rules files a promtool test file loads, as host paths (relative to the test file). */
export function ruleTestRuleFiles(testFile = RULES_TEST_FILE): string[] {
  const { rule_files } = parse(readFileSync(testFile, 'utf8')) as RuleTestFile;
  return rule_files.map((file) => path.resolve(path.dirname(testFile), file));
}

/** The daemon's metric names a PromQL expression uses (`os_audit_*`; label values left out). */
export function daemonMetricsUsed(expr: string): string[] {
  const withoutMatchers = expr.replace(/\{[^}]*\}/g, '');
  return [...new Set(withoutMatchers.match(/\bos_audit_[a-z0-9_]+\b/g) ?? [])];
}

/** Every series name the daemon's /metrics serves, a histogram's `_bucket`, `_sum` and `_count` included. */
export async function daemonSeriesNames(): Promise<Set<string>> {
  const metrics = new ProjectorMetrics({ projections: [], owner: 'names' });
  const families = await metrics.registry.getMetricsAsJSON();
  return new Set(families.flatMap(({ name, type }) => (String(type) === 'histogram' ? ['_bucket', '_sum', '_count'].map((suffix) => name + suffix) : [name])));
}
