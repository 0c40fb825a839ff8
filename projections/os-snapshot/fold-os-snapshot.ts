import { type EventObject, foldEvents, type FoldEventsOptions, type ProjectionEvent, type UnreadableEvent } from '../../src/projection-api.js';
import { OS_SNAPSHOT_COUNTERS, OS_SNAPSHOT_READS } from './os-snapshot-reads.js';
import { emptyOsSnapshot, type OsSnapshot, type ProcessRecord } from './os-snapshot.js';

/** What {@link foldOsSnapshotPrefix} did. */
export interface OsSnapshotFold {
  snapshot: OsSnapshot;
  /** Events consumed: folded, ignored or set aside (all of them unless it stopped). */
  consumed: number;
  /** The event it stopped at, if any: the snapshot is the fold of the events before it. */
  stoppedAt: UnreadableEvent | null;
}

/** A snapshot while it is folded: its records writable in place, its agents indexed. */
export interface OsSnapshotState {
  snapshot: { -readonly [Key in keyof OsSnapshot]: OsSnapshot[Key] extends readonly (infer Item)[] ? Item[] : OsSnapshot[Key] };
  /** Each agent's place in `process_by_agent`. */
  agentAt: Map<string, number>;
}

/** A fold state holding `snapshot` (copied: the fold never changes it). */
export function osSnapshotState(snapshot: OsSnapshot = emptyOsSnapshot()): OsSnapshotState {
  const copy = {
    ...snapshot,
    process_by_agent: snapshot.process_by_agent.slice(),
    budget_exceeded: snapshot.budget_exceeded.slice(),
    signals: snapshot.signals.slice(),
  };
  return { snapshot: copy, agentAt: new Map(copy.process_by_agent.map((process, i) => [process.agent_id, i])) };
}

const COUNTER_OF_KIND: ReadonlyMap<string, keyof typeof OS_SNAPSHOT_COUNTERS> = new Map(
  Object.entries(OS_SNAPSHOT_COUNTERS).map(([counter, kind]) => [kind, counter as keyof typeof OS_SNAPSHOT_COUNTERS]),
);

/**
 * One more event folded into the snapshot (see {@link foldOsSnapshot}): the projection's
 * `evolve`. It changes `state` in place.
 */
export function evolveOsSnapshot(state: OsSnapshotState, { kind, fields: f }: ProjectionEvent): OsSnapshotState {
  const snapshot = state.snapshot;
  const counter = COUNTER_OF_KIND.get(kind);
  if (counter !== undefined) {
    snapshot[counter] += 1;
    return state;
  }
  switch (kind) {
    case 'suspended':
      snapshot.last_suspend = { turn: f['turn'] as number, reason: f['reason'] as string, pending_calls: [...(f['pending_calls'] as string[])] };
      break;
    case 'resumed':
      snapshot.last_resumed_turn = f['turn'] as number;
      break;
    case 'agent_process_changed': {
      const record: ProcessRecord = {
        turn: f['turn'] as number,
        agent_id: f['agent_id'] as string,
        parent_session_id: f['parent_session_id'] as string | null,
        state: f['state'] as string,
      };
      const at = state.agentAt.get(record.agent_id);
      if (at === undefined) {
        state.agentAt.set(record.agent_id, snapshot.process_by_agent.length);
        snapshot.process_by_agent.push(record);
      } else {
        snapshot.process_by_agent[at] = record;
      }
      break;
    }
    case 'budget_exceeded':
      snapshot.budget_exceeded.push({ turn: f['turn'] as number, budget: f['budget'] as string });
      break;
    case 'signal_disposed':
      snapshot.signals.push({
        turn: f['turn'] as number,
        signal_id: f['signal_id'] as string,
        disposition: f['disposition'] as string,
        queue_depth: f['queue_depth'] as number,
      });
      break;
  }
  return state;
}

/** The in-memory fold's parts of the projection: its reads, counters and evolve. */
const OS_SNAPSHOT_FOLD = { reads: OS_SNAPSHOT_READS, counters: OS_SNAPSHOT_COUNTERS, init: () => osSnapshotState(), evolve: evolveOsSnapshot };

/**
 * Folds session events, in log (`seq`) order, into the OS audit snapshot
 * (`shared/spec/session-events.md`, section 3): the reference implementation, twin of the
 * seed's `rebuild_os_snapshot_from_events` and of the projector's SQL. It reads what
 * `OS_SNAPSHOT_READS` says, and counts what `OS_SNAPSHOT_COUNTERS` says:
 *
 * - `suspended` → `last_suspend = {turn, reason, pending_calls}` (the last one wins);
 * - `resumed` → `last_resumed_turn = turn` (the last one wins);
 * - `agent_process_changed` → one record `{turn, agent_id, parent_session_id, state}` per
 *   agent, kept at the position where the agent first appeared and holding its latest event's
 *   fields (a missing `parent_session_id` reads as `null`, a missing `state` as `"running"`);
 * - `budget_exceeded`, `signal_disposed` → appended in log order, never deduplicated;
 * - `page_out`, `page_in`, `tool_gated`, `memory_written`, `memory_queried`,
 *   `memory_validation_failed`, `memory_retrieval_result` → their counter += 1, whatever
 *   their fields;
 * - every other kind, known or not, changes nothing.
 *
 * It stops at the first event it cannot read: a field it reads missing or of another type (see
 * `readEvent`). It gives back the fold of the events before it, so a snapshot is always the
 * fold of a prefix of its log.
 *
 * The fold starts from `from` (the empty snapshot by default) and never changes it. So a log
 * may be folded in pieces: `foldOsSnapshot(b, foldOsSnapshot(a))` equals
 * `foldOsSnapshot([...a, ...b])` (when `a` can be read whole). Each event costs O(1); a
 * generator streaming millions works.
 *
 * @example
 * ```ts
 * const snapshot = foldOsSnapshot([
 *   { kind: 'signal_disposed', turn: 2, signal_id: 'sig-a', disposition: 'queue', queue_depth: 1 },
 *   { kind: 'suspended', turn: 3, reason: 'ask_user', pending_calls: ['c1'] },
 *   { kind: 'workflow_completed', turn: 4 }, // unknown kind: ignored
 * ]);
 * snapshot.last_suspend; // { turn: 3, reason: 'ask_user', pending_calls: ['c1'] }
 * snapshot.signals.length; // 1
 * ```
 */
export function foldOsSnapshot(events: Iterable<EventObject>, from?: OsSnapshot): OsSnapshot {
  return foldOsSnapshotPrefix(events, from).snapshot;
}

/**
 * {@link foldOsSnapshot}, saying where it stopped, and with events it may set aside.
 *
 * @example
 * ```ts
 * foldOsSnapshotPrefix([{ kind: 'resumed' }]).stoppedAt; // { index: 0, problem: 'field "turn": missing or null' }
 * ```
 */
export function foldOsSnapshotPrefix(events: Iterable<EventObject>, from?: OsSnapshot, options: FoldEventsOptions = {}): OsSnapshotFold {
  const fold = foldEvents(OS_SNAPSHOT_FOLD, events, osSnapshotState(from), options);
  return { snapshot: fold.state.snapshot, consumed: fold.consumed, stoppedAt: fold.stoppedAt };
}
