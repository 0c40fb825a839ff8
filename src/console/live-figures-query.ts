import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';

/** The figures the console's pages refresh every second. */
export interface LiveFigures {
  at: string;
  /** Events appended per second over the last {@link APPEND_WINDOW_SECONDS} seconds. */
  appendedPerSecond: number;
  projections: { projection: string; eventsApplied: number; lagEvents: number; lagSeconds: number }[];
}

/** The window of the appended rate. */
export const APPEND_WINDOW_SECONDS = 10;

/**
 * The live figures: the append rate (from `os_event_activity`, by its BRIN index on
 * `recorded_at`) and each projection's events folded and lag (from `os_projection_lag`); the
 * page computes the fold rate from successive reads of `eventsApplied`.
 *
 * @example
 * ```ts
 * const { appendedPerSecond } = await readLiveFigures(db);
 * ```
 */
export async function readLiveFigures(db: Kysely<DB>): Promise<LiveFigures> {
  const appended = await db
    .selectFrom('os_event_activity')
    .select([sql<number>`count(*)::float8`.as('events'), sql<string>`to_json(now())#>>'{}'`.as('at')])
    .where('recorded_at', '>', sql<Date>`now() - make_interval(secs => ${APPEND_WINDOW_SECONDS})`)
    .executeTakeFirstOrThrow();
  const lags = await db.selectFrom('os_projection_lag').select(['projection', 'events_applied', 'lag_events', 'lag_seconds']).orderBy('projection').execute();
  return {
    at: appended.at,
    appendedPerSecond: appended.events / APPEND_WINDOW_SECONDS,
    projections: lags.map((lag) => ({
      projection: lag.projection!,
      eventsApplied: Number(lag.events_applied ?? 0),
      lagEvents: Number(lag.lag_events ?? 0),
      lagSeconds: Number(lag.lag_seconds ?? 0),
    })),
  };
}
