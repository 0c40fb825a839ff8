/**
 * The event model of a session log: one interface per kind of the wire contract
 * (`shared/spec/session-events.md`, section 2), joined in the discriminated union
 * {@link SessionEvent}. Every event may carry extra fields; they are kept as they came.
 *
 * @module
 */

import type { JsonObject, JsonValue } from '../json/json-value.js';

/** An integer in 0..4294967295. */
export type U32 = number;
/** An integer in 0..2^64-1: a `number` while it is a safe integer, a `bigint` above. */
export type U64 = number | bigint;

interface EventBase {
  /** Extra fields the contract does not name are kept exactly. */
  [extra: string]: JsonValue | undefined;
}

export interface RunStarted extends EventBase {
  kind: 'run_started';
  run_id: string;
  goal: string;
  criteria: string[];
  agent_id?: string | null;
  system_prompt?: string | null;
}

export interface LlmCompleted extends EventBase {
  kind: 'llm_completed';
  turn: U32;
  message: JsonObject;
  provider_replay?: JsonObject | null;
}

export interface ToolCall extends JsonObject {
  id: string;
  name: string;
  arguments: JsonValue;
}

export interface ToolRequested extends EventBase {
  kind: 'tool_requested';
  turn: U32;
  calls: ToolCall[];
}

export interface ToolCompleted extends EventBase {
  kind: 'tool_completed';
  turn: U32;
  results: JsonObject[];
}

export interface RunTerminal extends EventBase {
  kind: 'run_terminal';
  reason: string;
  turns_used: U32;
  total_tokens: U64;
}

export interface ToolArgumentRepaired extends EventBase {
  kind: 'tool_argument_repaired';
  turn: U32;
  tool: string;
  original_arguments: string;
  repaired_arguments: string;
}

export interface PermissionRequested extends EventBase {
  kind: 'permission_requested';
  turn: U32;
  tool: string;
  arguments: string;
  reason?: string | null;
}

export interface PermissionResolved extends EventBase {
  kind: 'permission_resolved';
  turn: U32;
  approved: boolean;
  responder: string;
}

export interface ToolDenied extends EventBase {
  kind: 'tool_denied';
  turn: U32;
  call_id: string;
  tool_name: string;
  reason: string;
}

export interface Compressed extends EventBase {
  kind: 'compressed';
  turn: U32;
  archived_seq_range: [U64, U64];
  action?: string | null;
  summary?: string | null;
  archive_ref?: string | null;
  summary_tokens?: U32 | null;
  preserved_refs: string[];
}

export interface PageOut extends EventBase {
  kind: 'page_out';
  turn: U32;
  action?: string | null;
  summary?: string | null;
  tier_hint?: string | null;
  message_count: U32;
}

export interface PageIn extends EventBase {
  kind: 'page_in';
  turn: U32;
  entry_count: U32;
}

export interface LargeResultSpooled extends EventBase {
  kind: 'large_result_spooled';
  turn: U32;
  call_id: string;
  tool: string;
  original_size: U32;
  preview_size: U32;
  spool_ref?: string | null;
}

export interface CapabilityChanged extends EventBase {
  kind: 'capability_changed';
  turn: U32;
  added: string[];
  removed: string[];
  change_kind?: string | null;
  capability_id?: string | null;
  version?: string | null;
  mounted_by?: string | null;
  mount_reason?: string | null;
}

export interface ContextRenewed extends EventBase {
  kind: 'context_renewed';
  turn: U32;
  sprint: U32;
  handoff_ref: string;
}

export interface Suspended extends EventBase {
  kind: 'suspended';
  turn: U32;
  reason: string;
  pending_calls: string[];
}

export interface Resumed extends EventBase {
  kind: 'resumed';
  turn: U32;
  approved: string[];
  denied: string[];
}

export interface ToolGated extends EventBase {
  kind: 'tool_gated';
  turn: U32;
  call_id: string;
  tool: string;
  reason: string;
}

export interface SignalDisposed extends EventBase {
  kind: 'signal_disposed';
  turn: U32;
  signal_id: string;
  disposition: string;
  queue_depth: U32;
}

export interface BudgetExceeded extends EventBase {
  kind: 'budget_exceeded';
  turn: U32;
  budget: string;
}

export interface CheckpointTaken extends EventBase {
  kind: 'checkpoint_taken';
  turn: U32;
  history_len: U32;
}

/** The reason of a rollback: an object tagged by its own `kind`. */
export interface RollbackReason extends JsonObject {
  kind: string;
}

export interface Rollbacked extends EventBase {
  kind: 'rollbacked';
  turn: U32;
  checkpoint_history_len: U32;
  reason?: RollbackReason | null;
}

export interface AgentProcessChanged extends EventBase {
  kind: 'agent_process_changed';
  turn: U32;
  agent_id: string;
  parent_session_id: string;
  role: string;
  isolation: string;
  context_inheritance: string;
  /** A missing state reads as `"running"`, as the Node and Python SDKs write it. */
  state: string;
  permitted_capability_ids: string[];
  result_termination?: string | null;
}

export interface MilestoneAdvanced extends EventBase {
  kind: 'milestone_advanced';
  turn: U32;
  phase_id: string;
  capabilities_unlocked: string[];
}

export interface MilestoneBlocked extends EventBase {
  kind: 'milestone_blocked';
  turn: U32;
  phase_id: string;
  reason: string;
}

export interface MemoryWritten extends EventBase {
  kind: 'memory_written';
  turn: U32;
  memory_id: string;
  memory_kind: string;
  size_bytes: U32;
}

export interface MemoryQueried extends EventBase {
  kind: 'memory_queried';
  turn: U32;
  query_context: string;
  requested_k: U64;
  requires_async_response: boolean;
}

export interface MemoryValidationFailed extends EventBase {
  kind: 'memory_validation_failed';
  turn: U32;
  memory_id: string;
  error: string;
}

export interface MemoryRetrieval extends JsonObject {
  selected_memory_ids: string[];
  selection_rationale: string;
}

/**
 * The Rust runtime nests the retrieval under `retrieval`; the Node SDK writes its two fields
 * flat on the event. Both shapes are valid.
 */
export type MemoryRetrievalResult = EventBase & { kind: 'memory_retrieval_result' } & (
    | { retrieval: MemoryRetrieval }
    | { selected_memory_ids: string[]; selection_rationale: string }
  );

/** A kind this version does not know (newer SDKs write more): stored as is, ignored by the snapshot. */
export interface UnknownEvent extends EventBase {
  kind: string;
}

/** Every kind named by the contract. */
export type KnownSessionEvent =
  | RunStarted
  | LlmCompleted
  | ToolRequested
  | ToolCompleted
  | RunTerminal
  | ToolArgumentRepaired
  | PermissionRequested
  | PermissionResolved
  | ToolDenied
  | Compressed
  | PageOut
  | PageIn
  | LargeResultSpooled
  | CapabilityChanged
  | ContextRenewed
  | Suspended
  | Resumed
  | ToolGated
  | SignalDisposed
  | BudgetExceeded
  | CheckpointTaken
  | Rollbacked
  | AgentProcessChanged
  | MilestoneAdvanced
  | MilestoneBlocked
  | MemoryWritten
  | MemoryQueried
  | MemoryValidationFailed
  | MemoryRetrievalResult;

/** The kinds the contract names (section 2 of the spec). */
export type KnownEventKind = KnownSessionEvent['kind'];

/** One event of a session log, after validation. */
export type SessionEvent = KnownSessionEvent | UnknownEvent;

/** Narrows a validated event to a known kind; the validator has already checked its fields. */
export function isKnownEvent(event: SessionEvent): event is KnownSessionEvent {
  return KNOWN_EVENT_KINDS.has(event.kind);
}

/** Fails to compile when a `switch` over a kind forgets one. */
export function assertNever(value: never, what = 'value'): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(value)}`);
}

const KIND_LIST = [
  'run_started',
  'llm_completed',
  'tool_requested',
  'tool_completed',
  'run_terminal',
  'tool_argument_repaired',
  'permission_requested',
  'permission_resolved',
  'tool_denied',
  'compressed',
  'page_out',
  'page_in',
  'large_result_spooled',
  'capability_changed',
  'context_renewed',
  'suspended',
  'resumed',
  'tool_gated',
  'signal_disposed',
  'budget_exceeded',
  'checkpoint_taken',
  'rollbacked',
  'agent_process_changed',
  'milestone_advanced',
  'milestone_blocked',
  'memory_written',
  'memory_queried',
  'memory_validation_failed',
  'memory_retrieval_result',
] as const satisfies readonly KnownEventKind[];

// Compile-time proof that KIND_LIST names every kind of the union.
type MissingKind = Exclude<KnownEventKind, (typeof KIND_LIST)[number]>;
const everyKindListed: MissingKind extends never ? true : MissingKind = true;
void everyKindListed;

/** The 29 kinds of the contract, in the contract's order. */
export const KNOWN_EVENT_KINDS: ReadonlySet<string> = new Set<string>(KIND_LIST);
export const KNOWN_EVENT_KIND_LIST: readonly KnownEventKind[] = KIND_LIST;
