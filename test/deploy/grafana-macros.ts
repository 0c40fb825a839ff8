/** What Grafana fills the macros of a query with: the dashboard's time range and interval. */
export interface MacroContext {
  from: Date;
  to: Date;
  /** Grafana's `$__interval`, e.g. `1m`, `30s`, `1h`. */
  interval: string;
}

const INTERVAL_UNITS: Record<string, string> = { ms: 'milliseconds', s: 'seconds', m: 'minutes', h: 'hours', d: 'days', w: 'weeks' };

/**
 * Turns a query of Grafana's PostgreSQL data source into plain SQL, as Grafana would before
 * sending it, for the macros the os-audit dashboard uses: `$__interval`,
 * `$__timeFilter(column)` and `$__timeGroupAlias(column, interval)` (the time bucket, as a
 * timestamp column named "time"). Any other macro or a dashboard variable is an error, so
 * that a query the tests cannot run as Grafana would never passes unnoticed.
 *
 * @example
 * ```ts
 * expandGrafanaMacros("SELECT $__timeGroupAlias(recorded_at, $__interval), count(*) FROM t WHERE $__timeFilter(recorded_at) GROUP BY 1",
 *   { from: new Date('2025-01-01T00:00:00Z'), to: new Date('2025-01-02T00:00:00Z'), interval: '1m' });
 * // SELECT date_bin('1 minutes', recorded_at, '2000-01-01T00:00:00Z') AS "time", count(*) FROM t
 * //   WHERE recorded_at BETWEEN '2025-01-01T00:00:00.000Z' AND '2025-01-02T00:00:00.000Z' GROUP BY 1
 * ```
 */
export function expandGrafanaMacros(rawSql: string, context: MacroContext): string {
  const withInterval = rawSql.replace(/\$__interval\b/g, context.interval);
  const expanded = withInterval.replace(/\$__(\w+)\(([^()]*)\)/g, (macro, name: string, argumentText: string) => {
    const args = argumentText.split(',').map((arg) => arg.trim());
    const expect = (count: number) => {
      if (args.length !== count || args.some((arg) => arg === '')) throw new Error(`${macro}: $__${name} takes ${count} argument(s)`);
    };
    switch (name) {
      case 'timeFilter':
        expect(1);
        return `${args[0]} BETWEEN '${context.from.toISOString()}' AND '${context.to.toISOString()}'`;
      case 'timeGroupAlias':
        expect(2);
        return `date_bin('${postgresInterval(args[1]!)}', ${args[0]}, '2000-01-01T00:00:00Z') AS "time"`;
      default:
        throw new Error(`unknown Grafana macro ${macro}`);
    }
  });
  const leftover = /\$(?:\{[^}]*\}|\w+)|\[\[[^\]]*\]\]/.exec(expanded);
  if (leftover) throw new Error(`unknown Grafana macro or dashboard variable ${leftover[0]} in: ${rawSql}`);
  return expanded;
}

/** Grafana's interval notation (`1m`, `'5m'`) as a PostgreSQL interval literal. */
function postgresInterval(grafanaInterval: string): string {
  const match = /^'?(\d+)(ms|s|m|h|d|w)'?$/.exec(grafanaInterval);
  if (!match) throw new Error(`not an interval Grafana gives: ${grafanaInterval}`);
  return `${match[1]} ${INTERVAL_UNITS[match[2]!]}`;
}
