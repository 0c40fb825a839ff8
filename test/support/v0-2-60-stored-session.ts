import { type Kysely, sql } from 'kysely';
import { osSnapshotV0260Projection } from '../../projections/os-snapshot-v0-2-60/index.js';
import type { DB } from '../../src/db/schema.js';
import type { JsonObject } from '../../src/json/json-value.js';
import { parseJson } from '../../src/json/parse-json.js';
import { stringifyJson } from '../../src/json/stringify-json.js';
import { foldEvents } from '../../src/projector/fold-events.js';
import { EventStore } from '../../src/store/event-store.js';

/** A session's v0.2.60 snapshot (compact JSON text), the last seq folded into it, and where it stopped. */
export interface V0260Session {
  snapshot: string | null;
  lastSeq: number | null;
  stoppedAt: { index: number; problem: string } | null;
}

/**
 * What SQL holds of a session: the view's snapshot, the heads' `last_seq`, the projection's stop
 * (all `null` where the projector has not reached the session).
 *
 * @example
 * ```ts
 * expect(await sqlV0260Session(db, 's1')).toEqual(await foldedV0260Session(db, 's1'));
 * ```
 */
export async function sqlV0260Session(db: Kysely<DB>, sessionId: string): Promise<V0260Session> {
  const { rows } = await sql<{ snapshot: string | null; last_seq: number | null; stop_seq: number | null; problem: string | null }>`
    SELECT j.snapshot::text AS snapshot, s.last_seq, b.seq AS stop_seq, b.problem
    FROM (SELECT ${sessionId}::text AS session_id) AS k
    LEFT JOIN os_v0_2_60_snapshots AS s USING (session_id)
    LEFT JOIN os_snapshot_v0_2_60_json AS j USING (session_id)
    LEFT JOIN projection_blocked_sessions AS b ON b.session_id = k.session_id AND b.projection = ${osSnapshotV0260Projection.name}`.execute(db);
  const row = rows[0]!;
  return {
    snapshot: row.snapshot === null ? null : stringifyJson(parseJson(row.snapshot)),
    lastSeq: row.last_seq,
    stoppedAt: row.stop_seq === null ? null : { index: row.stop_seq, problem: row.problem! },
  };
}

/**
 * The in-memory fold of the session's stored log (each event `parseJson` of its stored text, as
 * `verify` reads it), as the same three things; with `skipInvalid`, unreadable events set aside
 * (as the projector's `--skip-invalid`).
 *
 * @example
 * ```ts
 * const { snapshot, stoppedAt } = await foldedV0260Session(db, 's1');
 * ```
 */
export async function foldedV0260Session(db: Kysely<DB>, sessionId: string, options: { skipInvalid?: boolean } = {}): Promise<V0260Session> {
  const events: JsonObject[] = [];
  for await (const stored of new EventStore(db).readSessionText(sessionId)) events.push(parseJson(stored.text) as JsonObject);
  const skip = () => options.skipInvalid ?? false;
  const { state, stoppedAt, consumed } = foldEvents(osSnapshotV0260Projection, events, undefined, { skip });
  return { snapshot: stringifyJson(osSnapshotV0260Projection.toJson(state)), lastSeq: consumed - 1, stoppedAt };
}
