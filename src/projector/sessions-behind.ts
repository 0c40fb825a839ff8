import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import type { Projection } from './projection.js';

/**
 * The sessions of which a projection has not folded every event yet, each with the seq its
 * log had reached: what a catch-up that cannot take the lease waits on, until the projector
 * holding it has folded them. Sessions the projection stopped are left out (nothing folds
 * them until a rebuild or `--skip-invalid`). Read by each session's seq against the
 * projection's heads, as on Citus, so it means the same on one server and on a cluster.
 *
 * @example
 * ```ts
 * let behind = await sessionsBehind(db, projection);
 * while (behind.length > 0) behind = await sessionsStillBehind(db, projection, behind);
 * ```
 */
export async function sessionsBehind(db: Kysely<DB>, projection: Projection): Promise<SessionBehind[]> {
  const { rows } = await sql<SessionBehind>`
    SELECT s.session_id AS "sessionId", s.last_seq AS "lastSeq"
    FROM sessions AS s
    LEFT JOIN (SELECT session_id, max(last_seq) AS last_seq FROM ${sql.table(projection.sessionHeads)} GROUP BY session_id) AS h
      ON h.session_id = s.session_id
    LEFT JOIN projection_blocked_sessions AS b ON b.session_id = s.session_id AND b.projection = ${projection.name}
    WHERE s.last_seq > coalesce(h.last_seq, -1) AND b.session_id IS NULL`.execute(db);
  return rows;
}

/**
 * Those of `behind` whose head is still short of the seq they had reached, and that the
 * projection has not stopped since.
 */
export async function sessionsStillBehind(db: Kysely<DB>, projection: Projection, behind: readonly SessionBehind[]): Promise<SessionBehind[]> {
  if (behind.length === 0) return [];
  const sessionIds = behind.map((session) => session.sessionId);
  // Two lookups by session_id, which Citus routes to the shards holding them, compared here.
  const heads = await sql<{ session_id: string; last_seq: number }>`
    SELECT session_id, max(last_seq) AS last_seq FROM ${sql.table(projection.sessionHeads)}
    WHERE session_id = ANY(${sessionIds}::text[]) GROUP BY session_id`.execute(db);
  const blocked = await sql<{ session_id: string }>`
    SELECT session_id FROM projection_blocked_sessions
    WHERE projection = ${projection.name} AND session_id = ANY(${sessionIds}::text[])`.execute(db);
  const headOf = new Map(heads.rows.map((row) => [row.session_id, row.last_seq]));
  const stopped = new Set(blocked.rows.map((row) => row.session_id));
  return behind.filter((session) => !stopped.has(session.sessionId) && (headOf.get(session.sessionId) ?? -1) < session.lastSeq);
}

/** A session a projection has not folded up to `lastSeq` yet. */
export interface SessionBehind {
  sessionId: string;
  lastSeq: number;
}
