/**
 * The setting under which sealed events are read by index. `citus_columnar`'s own scan, which
 * its planner prefers, would read a sealed partition whole to find one session's seqs. The
 * log's checks and chain functions, and a projector's batch connection, carry it. Without the
 * extension it changes nothing.
 */
export const SEALED_EVENTS_BY_INDEX = 'columnar.enable_custom_scan = off';
