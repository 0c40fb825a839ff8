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

/** Every query of the dashboard; one that is not raw SQL with a format (a builder query) is an error. */
export function panelQueries(dashboard: Dashboard): PanelQuery[] {
  return [...allPanels(dashboard.panels)].flatMap((panel) =>
    (panel.targets ?? []).map((target) => {
      const where = `panel "${panel.title}", target ${target.refId}`;
      if (!target.rawSql || target.rawQuery !== true) throw new Error(`${where}: not a raw SQL query`);
      // Grafana's default format changed between versions: the dashboard says which it means.
      if (!target.format) throw new Error(`${where}: no format`);
      return { panel, target, rawSql: target.rawSql, format: target.format };
    }),
  );
}
