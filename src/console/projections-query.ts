import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { type BlockedSession, readProjectionStatus } from '../projector/projection-status.js';
import type { ConsoleAccess } from './console-access.js';

/** One projection as the console's projections page shows it. */
export interface ConsoleProjection {
  projection: string;
  position: number;
  eventsApplied: number;
  lagEvents: number;
  lagSeconds: number;
  leader: string | null;
  leaderLive: boolean;
  updatedAt: Date;
  /** The daemon's last error and the events set aside: null where the role may not read the projector's tables. */
  lastError: { message: string; at: Date | null } | null;
  skippedEvents: number | null;
  stoppedTotal: number;
  /** The oldest {@link STOPPED_LISTED} sessions it stopped. */
  stopped: BlockedSession[];
}

/** How many stopped sessions the page lists per projection (all are in the view os_blocked_sessions). */
export const STOPPED_LISTED = 50;

/**
 * Every registered projection, read from the views `os_projection_lag` and `os_blocked_sessions`
 * (readable by `os_audit_reader`), with `readProjectionStatus`'s last error and events set
 * aside where the role may read them.
 *
 * @example
 * ```ts
 * for (const p of await readConsoleProjections(db, access)) console.log(p.projection, p.lagEvents, p.stopped.length);
 * ```
 */
export async function readConsoleProjections(db: Kysely<DB>, access: ConsoleAccess): Promise<ConsoleProjection[]> {
  const lags = await db
    .selectFrom('os_projection_lag')
    .select(['projection', 'checkpoint_position', 'events_applied', 'lag_events', 'lag_seconds', 'leader', 'leader_live', 'updated_at'])
    .orderBy('projection')
    .execute();
  const projections: ConsoleProjection[] = [];
  for (const lag of lags) {
    const projection = lag.projection!;
    const stopped = await db
      .selectFrom('os_blocked_sessions')
      .select(['session_id', 'blocked_at_seq', 'kind', 'reason', 'problem', 'blocked_at', sql<number>`count(*) OVER ()::int`.as('total')])
      .where('projection', '=', projection)
      .orderBy('blocked_at')
      .orderBy('session_id')
      .limit(STOPPED_LISTED)
      .execute();
    const status = access.projectorTables ? await readProjectionStatus(db, projection) : undefined;
    projections.push({
      projection,
      position: Number(lag.checkpoint_position ?? 0),
      eventsApplied: Number(lag.events_applied ?? 0),
      lagEvents: Number(lag.lag_events ?? 0),
      lagSeconds: Number(lag.lag_seconds ?? 0),
      leader: lag.leader,
      leaderLive: lag.leader_live ?? false,
      updatedAt: lag.updated_at!,
      lastError: status?.lastError ?? null,
      skippedEvents: status?.skippedEvents ?? null,
      stoppedTotal: stopped[0]?.total ?? 0,
      stopped: stopped.map((row) => ({
        sessionId: row.session_id!,
        seq: Number(row.blocked_at_seq),
        kind: row.kind,
        reason: row.reason!,
        problem: row.problem!,
        since: row.blocked_at!,
      })),
    });
  }
  return projections;
}
