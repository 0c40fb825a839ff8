import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { panelPromQueries, readDashboard } from './dashboard-panels.js';
import { readComposeFile, REPO_ROOT } from './deploy-files.js';
import {
  daemonMetricsUsed,
  daemonSeriesNames,
  mountedPrometheusConfig,
  readAlertRules,
  RULES_FILE,
  RULES_TEST_FILE,
  ruleTestRuleFiles,
  untestedAlerts,
} from './prometheus-files.js';
import { promtoolTestsRun, runPromtool } from './promtool.js';

const rules = readAlertRules();
const promQueries = panelPromQueries(readDashboard());
const composeConfigs = ['docker-compose.yml', 'docker-compose.citus.yml'].map((file) => {
  const prometheus = readComposeFile(file).services.prometheus;
  if (!prometheus) throw new Error(`${file}: no service prometheus`);
  return [file, mountedPrometheusConfig(prometheus).file] as const;
});
const scratch = mkdtempSync(path.join(tmpdir(), 'os-audit-promtool-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('the shipped alert rules', () => {
  it('has the alerts the issue asks for: no daemon, no leader, lag, halted, sessions stopped, batches failing, database', () => {
    expect(rules.map((rule) => rule.alert)).toEqual([
      'OsAuditNoDaemon',
      'OsAuditDaemonDown',
      'OsAuditNoLeader',
      'OsAuditLagHigh',
      'OsAuditProjectionHalted',
      'OsAuditSessionsStopped',
      'OsAuditBatchesFailing',
      'OsAuditDatabaseUnreachable',
    ]);
    expect(rules.find((rule) => rule.alert === 'OsAuditNoDaemon')!.expr).toMatch(/absent\(up\{job="os-audit"\}/);
  });

  it('gives each a duration, a severity, and a summary and a description that says what to do', () => {
    for (const rule of rules) {
      expect(rule.for, rule.alert).toMatch(/^\d+[smh]$/);
      expect(['critical', 'warning'], rule.alert).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary, rule.alert).toBeTruthy();
      expect(rule.annotations?.description, rule.alert).toMatch(/`os-audit |log|Restart|Check/);
    }
  });

  it('uses only metrics the daemon serves (a renamed metric fails here)', async () => {
    const served = await daemonSeriesNames();
    expect(served).toContain('os_audit_batch_duration_seconds_bucket');
    for (const rule of rules) {
      const used = daemonMetricsUsed(rule.expr);
      expect(used.length > 0 || /\bup\{job="os-audit"\}/.test(rule.expr), `${rule.alert} selects nothing of os-audit`).toBe(true);
      for (const name of used) expect(served, `${rule.alert}: ${name}`).toContain(name);
    }
  });

  it('are each tested by the promtool test file, firing and staying quiet', () => {
    expect(ruleTestRuleFiles()).toEqual([RULES_FILE]);
    expect(untestedAlerts(rules)).toEqual([]);
  });

  it('finds an alert tested one way only', () => {
    const rule = { alert: 'OsAuditSomethingNew', expr: 'vector(1)' };
    expect(untestedAlerts([...rules, rule])).toEqual(['OsAuditSomethingNew: no case where it fires', 'OsAuditSomethingNew: no case where it stays quiet']);
  });

  it('are each explained in docs/daemon.md', () => {
    const page = readFileSync(path.join(REPO_ROOT, 'docs', 'daemon.md'), 'utf8');
    for (const rule of rules) expect(page, rule.alert).toContain(`\`${rule.alert}\``);
  });
});

describe("the dashboard's Prometheus panels", () => {
  it('graph events per second, batch duration, lag, leaders, batch failures and the database, from metrics the daemon serves', async () => {
    const served = await daemonSeriesNames();
    const used = new Set(promQueries.flatMap(({ expr }) => daemonMetricsUsed(expr)));
    for (const name of used) expect(served, name).toContain(name);
    for (const name of ['os_audit_events_projected_total', 'os_audit_batch_duration_seconds_bucket', 'os_audit_lag_seconds', 'os_audit_leader', 'os_audit_batch_failures_total', 'os_audit_database_up']) {
      expect(used, name).toContain(name);
    }
  });
});

describe.skipIf(!promtoolTestsRun)('promtool', () => {
  it.each(composeConfigs)('finds the Prometheus configuration of %s valid, its rule files too', (_file, config) => {
    const run = runPromtool(['check', 'config', config]);
    expect(run.code, run.output).toBe(0);
  });

  it('finds the rules valid', () => {
    const run = runPromtool(['check', 'rules', RULES_FILE]);
    expect(run.code, run.output).toBe(0);
  });

  it('passes the unit tests of every alert', () => {
    const run = runPromtool(['test', 'rules', path.basename(RULES_TEST_FILE)], path.dirname(RULES_TEST_FILE));
    expect(run.code, run.output).toBe(0);
    expect(run.output).toContain('SUCCESS');
  });

  it("fails them with the old no-leader expression the docs once gave, which vanished series silence", () => {
    const document = parse(readFileSync(RULES_FILE, 'utf8')) as { groups: { rules: { alert?: string; expr: string }[] }[] };
    const noLeader = document.groups.flatMap((group) => group.rules).find((rule) => rule.alert === 'OsAuditNoLeader')!;
    noLeader.expr = 'sum by (projection) (os_audit_leader) != 1';
    const dir = mkdtempSync(path.join(scratch, 'silenced-'));
    writeFileSync(path.join(dir, path.basename(RULES_FILE)), stringify(document));
    copyFileSync(RULES_TEST_FILE, path.join(dir, path.basename(RULES_TEST_FILE)));
    const run = runPromtool(['test', 'rules', path.basename(RULES_TEST_FILE)], dir);
    expect(run.code).toBe(1);
    expect(run.output).toMatch(/alertname: OsAuditNoLeader, time: 12m/);
  });

  it("parses every PromQL expression of the dashboard (as recording rules; Grafana's variables given values)", () => {
    const file = path.join(scratch, 'dashboard-queries.yml');
    const expressions = promQueries.map(({ panel, target }, index) => ({
      record: `os_audit_dashboard:panel_${panel.id}_${target.refId}_${index}`,
      expr: target.expr!.replaceAll('$__rate_interval', '1m').replaceAll('$__interval', '1m').replaceAll('$__range', '1h'),
    }));
    expect(expressions.length).toBeGreaterThan(0);
    writeFileSync(file, stringify({ groups: [{ name: 'dashboard', rules: expressions }] }));
    const run = runPromtool(['check', 'rules', file]);
    expect(run.code, run.output).toBe(0);
  });
});
