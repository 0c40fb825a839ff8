import type { JsonObject } from '../../src/projection-api.js';
import { osSnapshotCounts } from '../os-snapshot/index.js';
import type { OsSnapshotV0260 } from './os-snapshot-v0-2-60.js';

/**
 * The snapshot as the Rust fold's JSON (serde, the struct's field order): `last_suspend`,
 * `last_resumed_turn`, `process_by_agent`, `budget_exceeded`, `budget_usage_reported`,
 * `cancellations`, `signals`, then the seven counters. Every key is present. An absent
 * suspend, resume or `reservation_id` of a `budget_exceeded` record is `null`: serde writes an
 * `Option` without `skip_serializing_if` so. `tokens` is an exact integer (`bigint` above
 * 2^53, which `stringifyJson` writes digit for digit). It is the projection's `toJson`, and
 * what the view `os_snapshot_v0_2_60_json` holds.
 *
 * The lists are copied (the fold goes on changing its own); their records, which the fold builds
 * in the Rust order and never changes, are shared.
 *
 * @example
 * ```ts
 * stringifyJson(osSnapshotV0260Json(emptyOsSnapshotV0260()));
 * // '{"last_suspend":null,"last_resumed_turn":null,"process_by_agent":[],"budget_exceeded":[],
 * //   "budget_usage_reported":[],"cancellations":[],"signals":[],"page_out_count":0, … }'  (one line)
 * ```
 */
export function osSnapshotV0260Json(snapshot: OsSnapshotV0260): JsonObject {
  const json = {
    last_suspend: snapshot.last_suspend,
    last_resumed_turn: snapshot.last_resumed_turn,
    process_by_agent: snapshot.process_by_agent.slice(),
    budget_exceeded: snapshot.budget_exceeded.slice(),
    budget_usage_reported: snapshot.budget_usage_reported.slice(),
    cancellations: snapshot.cancellations.slice(),
    signals: snapshot.signals.slice(),
    ...osSnapshotCounts(snapshot),
  } satisfies Record<keyof OsSnapshotV0260, unknown>;
  // Interfaces have no index signature: the records are JSON all the same.
  return json as unknown as JsonObject;
}
