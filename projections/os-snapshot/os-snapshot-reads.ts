
/**
 * What the OS audit snapshot reads of each kind it reads the fields of, and how much it
 * forgives (shared/spec/session-events.md, section 3): the one place both the in-memory fold
 * and the SQL fold take it from. An event missing a field marked required, or holding one of
 * another type, is unreadable and stops its session.
 */
export const OS_SNAPSHOT_READS = defineEventReads({
  suspended: { turn: field.u32(), reason: field.string(), pending_calls: field.strings().or([]) },
  resumed: { turn: field.u32() },
  agent_process_changed: {
    turn: field.u32(),
    agent_id: field.string(),
    parent_session_id: field.string().orNull(),
    state: field.string().or('running'),
    // Kept in os_processes beside the snapshot's record when they have their usual type; the
    // snapshot itself does not read them, so they never make an event unreadable.
    role: field.string().whenTyped(),
    isolation: field.string().whenTyped(),
    context_inheritance: field.string().whenTyped(),
    result_termination: field.string().whenTyped(),
    permitted_capability_ids: field.strings().whenTyped(),
  },
  budget_exceeded: { turn: field.u32(), budget: field.string() },
  signal_disposed: { turn: field.u32(), signal_id: field.string(), disposition: field.string(), queue_depth: field.u32() },
});

/** The snapshot's counters: each counts the events of its kind, whatever their fields. */
export const OS_SNAPSHOT_COUNTERS = {
  page_out_count: 'page_out',
  page_in_count: 'page_in',
  tool_gated_count: 'tool_gated',
  memory_written_count: 'memory_written',
  memory_queried_count: 'memory_queried',
  memory_validation_failed_count: 'memory_validation_failed',
  memory_retrieval_result_count: 'memory_retrieval_result',
} as const;import { defineEventReads, field } from '../../src/projection-api.js';

