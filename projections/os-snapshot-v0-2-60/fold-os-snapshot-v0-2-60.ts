import type { ProjectionEvent } from '../../src/projection-api.js';
import { evolveOsSnapshot } from '../os-snapshot/index.js';
import { emptyOsSnapshotV0260, type OsSnapshotV0260 } from './os-snapshot-v0-2-60.js';

/** A v0.2.60 snapshot while it is folded: its lists writable in place, its agents indexed. */
export interface OsSnapshotV0260State {
  snapshot: { -readonly [Key in keyof OsSnapshotV0260]: OsSnapshotV0260[Key] extends readonly (infer Item)[] ? Item[] : OsSnapshotV0260[Key] };
  /** Each agent's place in `process_by_agent`. */
  agentAt: Map<string, number>;
}

/**
 * The state of a session before its first event: the projection's `init`.
 *
 * @example
 * ```ts
 * const state = osSnapshotV0260State();
 * state.snapshot.signals; // []
 * ```
 */
export function osSnapshotV0260State(): OsSnapshotV0260State {
  // The empty snapshot's lists are new ones, this state's own to fill.
  return { snapshot: emptyOsSnapshotV0260() as OsSnapshotV0260State['snapshot'], agentAt: new Map() };
}

/**
 * One more event folded into the v0.2.60 snapshot, in place: the projection's `evolve`, twin of
 * the Rust core's `rebuild_os_snapshot_from_events` at v0.2.60 (`OS_SNAPSHOT_V0_2_60_READS` says
 * how each event is read):
 *
 * - `budget_exceeded`, `budget_usage_reported`, `operation_cancelled`,
 *   `signal_delivery_disposed` → appended to `budget_exceeded`, `budget_usage_reported`,
 *   `cancellations`, `signals`, in log order, never deduplicated;
 * - `suspended`, `resumed`, `agent_process_changed` and the seven counted kinds → the seed's
 *   rules, which v0.2.60 kept, folded by the seed's own `evolveOsSnapshot`.
 *
 * Records are built with their keys in the Rust fold's order.
 *
 * @example
 * ```ts
 * const { state } = foldEvents(osSnapshotV0260Projection, [
 *   { kind: 'operation_cancelled', turn: 4, operation_id: 'op-1', reason: 'user' },
 * ]);
 * state.snapshot.cancellations; // [{ turn: 4, operation_id: 'op-1', reason: 'user', pending_call_ids: [] }]
 * ```
 */
export function evolveOsSnapshotV0260(state: OsSnapshotV0260State, event: ProjectionEvent): OsSnapshotV0260State {
  const { snapshot } = state;
  const f = event.fields;
  switch (event.kind) {
    case 'budget_exceeded':
      snapshot.budget_exceeded.push({
        turn: f['turn'] as number,
        operation_id: f['operation_id'] as string,
        reservation_id: f['reservation_id'] as string | null,
        budget: f['budget'] as string,
      });
      return state;
    case 'budget_usage_reported':
      snapshot.budget_usage_reported.push({
        turn: f['turn'] as number,
        operation_id: f['operation_id'] as string,
        reservation_id: f['reservation_id'] as string,
        tokens: f['tokens'] as number | bigint,
        subagents: f['subagents'] as number,
        rounds: f['rounds'] as number,
      });
      return state;
    case 'operation_cancelled':
      snapshot.cancellations.push({
        turn: f['turn'] as number,
        operation_id: f['operation_id'] as string,
        reason: f['reason'] as string,
        pending_call_ids: [...(f['pending_call_ids'] as string[])],
      });
      return state;
    case 'signal_delivery_disposed':
      snapshot.signals.push({
        turn: f['turn'] as number,
        operation_id: f['operation_id'] as string,
        delivery_id: f['delivery_id'] as string,
        attempt: f['attempt'] as number,
        signal_id: f['signal_id'] as string,
        disposition: f['disposition'] as string,
        queue_depth: f['queue_depth'] as number,
      });
      return state;
    default:
      // Its snapshot holds every part the seed's fold writes, records of the same keys or more.
      evolveOsSnapshot(state, event);
      return state;
  }
}
