import { describe, expect, it } from 'vitest';
import { expandGrafanaMacros } from './grafana-macros.js';

const context = { from: new Date('2025-03-01T10:00:00Z'), to: new Date('2025-03-01T16:00:00Z'), interval: '5m' };

describe('expanding the Grafana macros of a dashboard query', () => {
  it('fills the time filter, the time bucket and the interval as Grafana would', () => {
    expect(
      expandGrafanaMacros('SELECT $__timeGroupAlias(recorded_at, $__interval), count(*) AS n FROM t WHERE $__timeFilter(recorded_at) GROUP BY 1', context),
    ).toBe(
      `SELECT date_bin('5 minutes', recorded_at, '2000-01-01T00:00:00Z') AS "time", count(*) AS n FROM t ` +
        `WHERE recorded_at BETWEEN '2025-03-01T10:00:00.000Z' AND '2025-03-01T16:00:00.000Z' GROUP BY 1`,
    );
    expect(expandGrafanaMacros("SELECT $__timeGroupAlias(at, '1h')", context)).toBe(`SELECT date_bin('1 hours', at, '2000-01-01T00:00:00Z') AS "time"`);
    expect(expandGrafanaMacros('SELECT 1', context)).toBe('SELECT 1');
  });

  it.each([
    ['a macro it does not know', 'SELECT $__timeGroup(at, $__interval)'],
    ['a macro without its parentheses', 'SELECT 1 WHERE $__timeFilter'],
    ['a macro that only starts like a known one', 'SELECT $__interval_ms'],
    ['a dashboard variable', "SELECT 1 WHERE session_id = '$session'"],
    ['a dashboard variable in braces', 'SELECT 1 WHERE session_id = ${session}'],
    ['a dashboard variable in the old syntax', 'SELECT 1 WHERE session_id = [[session]]'],
    ['a wrong number of arguments', 'SELECT $__timeGroupAlias(at)'],
    ['an interval Grafana does not give', "SELECT $__timeGroupAlias(at, 'soon')"],
  ])('refuses %s', (_case, rawSql) => {
    expect(() => expandGrafanaMacros(rawSql, context)).toThrow();
  });
});
