import { defineEventReads, field } from '../../src/projection-api.js';
import { OS_SNAPSHOT_COUNTERS, OS_SNAPSHOT_READS } from '../os-snapshot/index.js';

/**
 * What the v0.2.60 snapshot reads of each kind, and how much it forgives: the one place both its
 * in-memory fold and its SQL fold take it from. An event missing a field marked required, or
 * holding one of another type (a u64 `tokens` written `1.0`, a string `attempt`, …), is
 * unreadable and stops its session (shared/spec/session-events.md, section 3).
 *
 * The rules follow the Rust core's `SessionEvent` at v0.2.60, which the runtime's writers
 * (`kernel-event-log.ts` of the Node SDK) always fill:
 *
 * - `suspended`, `resumed`, `agent_process_changed`: as the seed's snapshot reads them
 *   (`OS_SNAPSHOT_READS`): v0.2.60 did not change them. A missing `pending_calls` reads as `[]`
 *   (Rust: `serde(default)`); a missing `parent_session_id` as `null` and a missing `state` as
 *   `"running"`, as the SDKs' folds do: the v0.2.60 SDK never writes `parent_session_id`, which
 *   the Rust core would refuse. `parent_task_id`, which the SDK writes instead, is kept beside the
 *   record when it is a string; the Rust record has no such field, so the snapshot has none.
 * - `budget_exceeded`: `reservation_id` may be missing or `null` (Rust: `Option`, defaulted);
 *   `operation_id` is required, so a seed-era event without it is unreadable here (the seed's
 *   projection still reads it).
 * - `budget_usage_reported`, `signal_delivery_disposed`: every field required (no Rust default).
 *   `tokens` is a u64, exact above 2^53.
 * - `operation_cancelled`: a missing `pending_call_ids` reads as `[]` (Rust: `serde(default)`);
 *   `reason` is free text, not checked against the runtime's `CancellationReason` values.
 * - `null` reads as missing, for every field (Rust would refuse a `null` list).
 *
 * `signal_disposed` (the seed's signals) is not read: at v0.2.60 it changes nothing.
 *
 * @example
 * ```ts
 * readEvent(OS_SNAPSHOT_V0_2_60_READS, { kind: 'budget_exceeded', turn: 3, operation_id: 'op-1', budget: 'tokens' });
 * // { problem: null, fields: { turn: 3, operation_id: 'op-1', reservation_id: null, budget: 'tokens' } }
 * readEvent(OS_SNAPSHOT_V0_2_60_READS, { kind: 'budget_exceeded', turn: 3, budget: 'tokens' }).problem;
 * // 'field "operation_id": missing or null'
 * ```
 */
export const OS_SNAPSHOT_V0_2_60_READS = defineEventReads({
  suspended: OS_SNAPSHOT_READS.suspended,
  resumed: OS_SNAPSHOT_READS.resumed,
  agent_process_changed: { ...OS_SNAPSHOT_READS.agent_process_changed, parent_task_id: field.string().whenTyped() },
  budget_exceeded: { turn: field.u32(), operation_id: field.string(), reservation_id: field.string().orNull(), budget: field.string() },
  budget_usage_reported: {
    turn: field.u32(),
    operation_id: field.string(),
    reservation_id: field.string(),
    tokens: field.u64(),
    subagents: field.u32(),
    rounds: field.u32(),
  },
  operation_cancelled: { turn: field.u32(), operation_id: field.string(), reason: field.string(), pending_call_ids: field.strings().or([]) },
  signal_delivery_disposed: {
    turn: field.u32(),
    operation_id: field.string(),
    delivery_id: field.string(),
    attempt: field.u32(),
    signal_id: field.string(),
    disposition: field.string(),
    queue_depth: field.u32(),
  },
});

/**
 * The seven counters, unchanged at v0.2.60: each counts the events of its kind, whatever their fields.
 *
 * @example
 * ```ts
 * OS_SNAPSHOT_V0_2_60_COUNTERS.memory_written_count; // 'memory_written'
 * ```
 */
export const OS_SNAPSHOT_V0_2_60_COUNTERS = OS_SNAPSHOT_COUNTERS;
