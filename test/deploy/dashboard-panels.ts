import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './deploy-files.js';

/** The dashboard Grafana is provisioned with. */
export const DASHBOARD_FILE = path.join(REPO_ROOT, 'deploy/grafana/dashboards/os-audit.json');

export interface DatasourceRef {
  type: string;
  uid: string;
}

export interface DashboardTarget {
  refId: string;
  datasource?: DatasourceRef;
  format?: 'table' | 'time_series';
  rawQuery?: boolean;
  rawSql?: string;
  /** PromQL, for a target of a Prometheus data source. */
  expr?: string;
}

export interface DashboardPanel {
  id: number;
  type: string;
  title: string;
  datasource?: DatasourceRef;
  targets?: DashboardTarget[];
  /** The panels of a collapsed row. */
  panels?: DashboardPanel[];
}

export interface Dashboard {
  uid: string;
  title: string;
  panels: DashboardPanel[];
  templating?: { list: unknown[] };
}

/** A raw SQL query of the dashboard, with the panel it feeds. */
export interface PanelQuery {
  panel: DashboardPanel;
  target: DashboardTarget;
  rawSql: string;
  format: 'table' | 'time_series';
}

export function readDashboard(file = DASHBOARD_FILE): Dashboard {
  return JSON.parse(readFileSync(file, 'utf8')) as Dashboard;
}

/** Every panel, rows and the panels inside collapsed rows included, in the file's order. */
export function* allPanels(panels: readonly DashboardPanel[]): Generator<DashboardPanel> {
  for (const panel of panels) {
    yield panel;
    yield* allPanels(panel.panels ?? []);
  }
}

/** A PromQL query of the dashboard, with the panel it feeds. */
export interface PanelPromQuery {
  panel: DashboardPanel;
  target: DashboardTarget;
  expr: string;
}

/** The Grafana data source type of the daemon's metrics; every other query of the dashboard is SQL. */
export const PROMETHEUS_DATASOURCE_TYPE = 'prometheus';

const queriesPrometheus = (panel: DashboardPanel, target: DashboardTarget) => (target.datasource ?? panel.datasource)?.type === PROMETHEUS_DATASOURCE_TYPE;

/** Every SQL query of the dashboard; one that is not raw SQL with a format (a builder query) is an error. */
export function panelQueries(dashboard: Dashboard): PanelQuery[] {
  return [...allPanels(dashboard.panels)].flatMap((panel) =>
    (panel.targets ?? []).filter((target) => !queriesPrometheus(panel, target)).map((target) => {
      const where = `panel "${panel.title}", target ${target.refId}`;
      if (!target.rawSql || target.rawQuery !== true) throw new Error(`${where}: not a raw SQL query`);
      // Grafana's default format changed between versions: the dashboard says which it means.
      if (!target.format) throw new Error(`${where}: no format`);
      return { panel, target, rawSql: target.rawSql, format: target.format };
    }),
  );
}

/** Every PromQL query of the dashboard (its Prometheus panels); one without an expression is an error. */
export function panelPromQueries(dashboard: Dashboard): PanelPromQuery[] {
  return [...allPanels(dashboard.panels)].flatMap((panel) =>
    (panel.targets ?? []).filter((target) => queriesPrometheus(panel, target)).map((target) => {
      if (!target.expr) throw new Error(`panel "${panel.title}", target ${target.refId}: no PromQL expression`);
      return { panel, target, expr: target.expr };
    }),
  );
}
