/** The stop of a session as the console lists it: which projection, and the event's kind and problem. */
export interface StopFacts {
  projection: string;
  kind: string | null;
  problem: string;
}

/**
 * The note for a stop that is an older runtime's log rather than a fault: `os_snapshot_v0_2_60`
 * requires the `operation_id` of `budget_exceeded`, which the runtime before v0.2.60 did not
 * write (`samples/older-format/` holds such logs). Undefined for any other stop.
 *
 * @example
 * ```ts
 * olderFormatNote({ projection: 'os_snapshot_v0_2_60', kind: 'budget_exceeded', problem: 'field "operation_id": missing or null' });
 * // 'older runtime format: os_snapshot_v0_2_60 cannot read it'
 * ```
 */
export function olderFormatNote(stop: StopFacts): string | undefined {
  const olderFormat = stop.projection === 'os_snapshot_v0_2_60' && stop.kind === 'budget_exceeded' && stop.problem.startsWith('field "operation_id": missing');
  return olderFormat ? `older runtime format: ${stop.projection} cannot read it` : undefined;
}
