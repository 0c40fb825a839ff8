import type { JsonObject } from '../../src/json/json-value.js';

/** A plausible event for position `seq` of a session: kinds the snapshot reads and others. */
export function sampleEvent(seq: number): JsonObject {
  const turn = Math.floor(seq / 4);
  switch (seq % 5) {
    case 0:
      return { kind: 'agent_process_changed', turn, agent_id: `child-${seq % 3}`, parent_session_id: 'p', role: 'worker', isolation: 'shared', context_inheritance: 'none', state: seq % 2 ? 'joined' : 'running', permitted_capability_ids: [] };
    case 1:
      return { kind: 'signal_disposed', turn, signal_id: `sig-${seq}`, disposition: 'queue', queue_depth: seq % 4 };
    case 2:
      return { kind: 'llm_completed', turn, message: { role: 'assistant', content: `thinking about step ${seq}` } };
    case 3:
      return { kind: 'tool_gated', turn, call_id: `c${seq}`, tool: 'shell', reason: 'ask_user' };
    default:
      return { kind: 'page_out', turn, summary: 'paged', message_count: 3 };
  }
}
