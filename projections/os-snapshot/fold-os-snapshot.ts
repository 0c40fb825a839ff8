import { assertNever, isKnownEvent, type SessionEvent } from '../../src/events/session-event.js';
import {
  emptyOsSnapshot,
  type BudgetExceededRecord,
  type OsSnapshot,
  type ProcessRecord,
  type SignalRecord,
  type SuspendRecord,
} from './os-snapshot.js';

/**
 * Folds session events, in log (`seq`) order, into the OS audit snapshot
 * (`shared/spec/session-events.md`, section 3): the reference implementation, twin of the
 * seed's `rebuild_os_snapshot_from_events`.
 *
 * - `suspended` → `last_suspend = {turn, reason, pending_calls}` (the last one wins);
 * - `resumed` → `last_resumed_turn = turn` (the last one wins);
 * - `agent_process_changed` → one record `{turn, agent_id, parent_session_id, state}` per
 *   agent, kept at the position where the agent first appeared and holding its latest event's
 *   fields (a missing `state` reads as `"running"`);
 * - `budget_exceeded`, `signal_disposed` → appended in log order, never deduplicated;
 * - `page_out`, `page_in`, `tool_gated`, `memory_written`, `memory_queried`,
 *   `memory_validation_failed`, `memory_retrieval_result` → their counter += 1;
 * - every other kind, known or not, changes nothing.
 *
 * The fold starts from `from` (the empty snapshot by default) and never mutates it: the
 * arrays it changes are copied, the ones it does not are shared with the result. So a log may
 * be folded in pieces: `foldOsSnapshot(b, foldOsSnapshot(a))` equals `foldOsSnapshot([...a, ...b])`.
 * `from` must be a snapshot this function could have produced (distinct agent ids).
 *
 * Each event costs O(1) (agents are found through a `Map`); starting from `from` costs
 * O(size of what changes in it) once. The events are read once, so a generator streaming a
 * log of millions of events works.
 *
 * The events are expected to be validated (`validateEvent`), but the fold reads them
 * defensively: a missing `state` is `"running"` and missing `pending_calls` are `[]`.
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
 * foldOsSnapshot([{ kind: 'resumed', turn: 5, approved: [], denied: [] }], snapshot).last_resumed_turn; // 5
 * ```
 */
export function foldOsSnapshot(events: Iterable<SessionEvent>, from?: OsSnapshot): OsSnapshot {
  const base = from ?? emptyOsSnapshot();

  let lastSuspend: SuspendRecord | null = base.last_suspend;
  let lastResumedTurn: number | null = base.last_resumed_turn;
  let pageOut = base.page_out_count;
  let pageIn = base.page_in_count;
  let toolGated = base.tool_gated_count;
  let memoryWritten = base.memory_written_count;
  let memoryQueried = base.memory_queried_count;
  let memoryValidationFailed = base.memory_validation_failed_count;
  let memoryRetrievalResult = base.memory_retrieval_result_count;

  // Copied from `base` on the first write only (copy-on-write), so that folding a short
  // batch onto a large snapshot does not copy what the batch leaves alone.
  let processes: ProcessRecord[] | null = null;
  let processIndex: Map<string, number> | null = null;
  let budgets: BudgetExceededRecord[] | null = null;
  let signals: SignalRecord[] | null = null;

  for (const event of events) {
    if (!isKnownEvent(event)) {
      continue; // a kind this version does not know: stored, never read by the snapshot
    }
    switch (event.kind) {
      case 'suspended':
        lastSuspend = {
          turn: event.turn,
          reason: event.reason,
          pending_calls: [...(event.pending_calls ?? [])],
        };
        break;
      case 'resumed':
        lastResumedTurn = event.turn;
        break;
      case 'agent_process_changed': {
        if (processes === null || processIndex === null) {
          processes = base.process_by_agent.slice();
          processIndex = new Map();
          for (let i = 0; i < processes.length; i++) {
            processIndex.set(processes[i]!.agent_id, i);
          }
        }
        const record: ProcessRecord = {
          turn: event.turn,
          agent_id: event.agent_id,
          parent_session_id: event.parent_session_id,
          state: event.state ?? 'running',
        };
        const index = processIndex.get(event.agent_id);
        if (index === undefined) {
          processIndex.set(event.agent_id, processes.length);
          processes.push(record);
        } else {
          processes[index] = record;
        }
        break;
      }
      case 'budget_exceeded':
        budgets ??= base.budget_exceeded.slice();
        budgets.push({ turn: event.turn, budget: event.budget });
        break;
      case 'signal_disposed':
        signals ??= base.signals.slice();
        signals.push({
          turn: event.turn,
          signal_id: event.signal_id,
          disposition: event.disposition,
          queue_depth: event.queue_depth,
        });
        break;
      case 'page_out':
        pageOut += 1;
        break;
      case 'page_in':
        pageIn += 1;
        break;
      case 'tool_gated':
        toolGated += 1;
        break;
      case 'memory_written':
        memoryWritten += 1;
        break;
      case 'memory_queried':
        memoryQueried += 1;
        break;
      case 'memory_validation_failed':
        memoryValidationFailed += 1;
        break;
      case 'memory_retrieval_result':
        memoryRetrievalResult += 1;
        break;
      // The kinds without a snapshot effect, listed so that a new kind fails to compile here.
      case 'run_started':
      case 'llm_completed':
      case 'tool_requested':
      case 'tool_completed':
      case 'run_terminal':
      case 'tool_argument_repaired':
      case 'permission_requested':
      case 'permission_resolved':
      case 'tool_denied':
      case 'compressed':
      case 'large_result_spooled':
      case 'capability_changed':
      case 'context_renewed':
      case 'checkpoint_taken':
      case 'rollbacked':
      case 'milestone_advanced':
      case 'milestone_blocked':
        break;
      default:
        assertNever(event, 'event kind');
    }
  }

  return {
    last_suspend: lastSuspend,
    last_resumed_turn: lastResumedTurn,
    process_by_agent: processes ?? base.process_by_agent,
    budget_exceeded: budgets ?? base.budget_exceeded,
    signals: signals ?? base.signals,
    page_out_count: pageOut,
    page_in_count: pageIn,
    tool_gated_count: toolGated,
    memory_written_count: memoryWritten,
    memory_queried_count: memoryQueried,
    memory_validation_failed_count: memoryValidationFailed,
    memory_retrieval_result_count: memoryRetrievalResult,
  };
}
