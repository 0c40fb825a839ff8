import { type EventObject, readEvent } from '../../src/projector/event-reads.js';
import { OS_SNAPSHOT_COUNTERS, OS_SNAPSHOT_READS } from './os-snapshot-reads.js';
import {
  emptyOsSnapshot,
  type BudgetExceededRecord,
  type OsSnapshot,
  type ProcessRecord,
  type SignalRecord,
  type SuspendRecord,
} from './os-snapshot.js';

/** An event the snapshot could not read: where it stands among the events folded, and why. */
export interface UnreadableEvent {
  index: number;
  problem: string;
}

/** What {@link foldOsSnapshotPrefix} did. */
export interface OsSnapshotFold {
  snapshot: OsSnapshot;
  /** Events consumed: folded, ignored or set aside (all of them unless it stopped). */
  consumed: number;
  /** The event it stopped at, if any: the snapshot is the fold of the events before it. */
  stoppedAt: UnreadableEvent | null;
}

export interface FoldOptions {
  /** Set this event aside instead of stopping at it, when it is unreadable (`--skip-invalid`). */
  skip?: (index: number) => boolean;
}

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
 * It stops at the first event it cannot read (a field it reads missing or of another type, see
 * `readEvent`) and gives back the fold of the events before it: a snapshot is always the fold
 * of a prefix of its log.
 *
 * The fold starts from `from` (the empty snapshot by default) and never mutates it: the arrays
 * it changes are copied, the ones it does not are shared with the result. So a log may be
 * folded in pieces: `foldOsSnapshot(b, foldOsSnapshot(a))` equals `foldOsSnapshot([...a, ...b])`
 * (when `a` can be read whole). Each event costs O(1); a generator streaming millions works.
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

const COUNTER_OF_KIND: ReadonlyMap<string, keyof typeof OS_SNAPSHOT_COUNTERS> = new Map(
  Object.entries(OS_SNAPSHOT_COUNTERS).map(([counter, kind]) => [kind, counter as keyof typeof OS_SNAPSHOT_COUNTERS]),
);

/**
 * {@link foldOsSnapshot}, saying where it stopped, and with events it may set aside.
 *
 * @example
 * ```ts
 * foldOsSnapshotPrefix([{ kind: 'resumed' }]).stoppedAt; // { index: 0, problem: 'field "turn": missing or null' }
 * ```
 */
export function foldOsSnapshotPrefix(events: Iterable<EventObject>, from?: OsSnapshot, options: FoldOptions = {}): OsSnapshotFold {
  const base = from ?? emptyOsSnapshot();
  const counters: Record<keyof typeof OS_SNAPSHOT_COUNTERS, number> = {
    page_out_count: base.page_out_count,
    page_in_count: base.page_in_count,
    tool_gated_count: base.tool_gated_count,
    memory_written_count: base.memory_written_count,
    memory_queried_count: base.memory_queried_count,
    memory_validation_failed_count: base.memory_validation_failed_count,
    memory_retrieval_result_count: base.memory_retrieval_result_count,
  };
  let lastSuspend: SuspendRecord | null = base.last_suspend;
  let lastResumedTurn: number | null = base.last_resumed_turn;
  // Copied from `base` on the first write only (copy-on-write), so that folding a short
  // batch onto a large snapshot does not copy what the batch leaves alone.
  let processes: ProcessRecord[] | null = null;
  let processIndex: Map<string, number> | null = null;
  let budgets: BudgetExceededRecord[] | null = null;
  let signals: SignalRecord[] | null = null;

  let index = 0;
  let stoppedAt: UnreadableEvent | null = null;
  for (const event of events) {
    const kind = event['kind'] as string;
    const counter = COUNTER_OF_KIND.get(kind);
    if (counter !== undefined) {
      counters[counter] += 1;
      index++;
      continue;
    }
    const read = readEvent(OS_SNAPSHOT_READS, event);
    if (read === undefined) {
      index++;
      continue;
    }
    if (read.problem !== null) {
      if (options.skip?.(index)) {
        index++;
        continue;
      }
      stoppedAt = { index, problem: read.problem };
      break;
    }
    const f = read.fields;
    switch (kind) {
      case 'suspended':
        lastSuspend = { turn: f['turn'] as number, reason: f['reason'] as string, pending_calls: [...(f['pending_calls'] as string[])] };
        break;
      case 'resumed':
        lastResumedTurn = f['turn'] as number;
        break;
      case 'agent_process_changed': {
        if (processes === null || processIndex === null) {
          processes = base.process_by_agent.slice();
          processIndex = new Map(processes.map((process, i) => [process.agent_id, i]));
        }
        const record: ProcessRecord = {
          turn: f['turn'] as number,
          agent_id: f['agent_id'] as string,
          parent_session_id: f['parent_session_id'] as string | null,
          state: f['state'] as string,
        };
        const at = processIndex.get(record.agent_id);
        if (at === undefined) {
          processIndex.set(record.agent_id, processes.length);
          processes.push(record);
        } else {
          processes[at] = record;
        }
        break;
      }
      case 'budget_exceeded':
        (budgets ??= base.budget_exceeded.slice()).push({ turn: f['turn'] as number, budget: f['budget'] as string });
        break;
      case 'signal_disposed':
        (signals ??= base.signals.slice()).push({
          turn: f['turn'] as number,
          signal_id: f['signal_id'] as string,
          disposition: f['disposition'] as string,
          queue_depth: f['queue_depth'] as number,
        });
        break;
    }
    index++;
  }

  return {
    snapshot: {
      last_suspend: lastSuspend,
      last_resumed_turn: lastResumedTurn,
      process_by_agent: processes ?? base.process_by_agent,
      budget_exceeded: budgets ?? base.budget_exceeded,
      signals: signals ?? base.signals,
      ...counters,
    },
    consumed: index,
    stoppedAt,
  };
}
