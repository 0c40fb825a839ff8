import { type RawBuilder, sql } from 'kysely';
import { type EventRows, eventColumnsSql } from './event-rows.js';

/**
 * Of rows that should already be stored (a re-import), the first one (by its index in `rows`,
 * from 1) that is missing or stored with a different body; no row when all match. Bodies are
 * compared by their exact text (both without white space between tokens), except for events
 * stored before migration 0007, whose text jsonb rewrote (its key order, its number text):
 * those are compared by value.
 */
export function findFirstMismatchSql(rows: EventRows): RawBuilder<{ ordinal: number }> {
  return sql`
    SELECT e.ordinal::int AS ordinal
    FROM ROWS FROM (unnest(${rows.sessionIds}::text[]), unnest(${rows.seqs}::bigint[]), ${eventColumnsSql(rows)})
         WITH ORDINALITY AS e(session_id, seq, kind, turn, payload, payload_text, ordinal)
    LEFT JOIN session_events AS stored ON stored.session_id = e.session_id AND stored.seq = e.seq
    WHERE stored.seq IS NULL
       OR (coalesce(stored.payload_text, stored.payload::text) <> coalesce(e.payload_text, e.payload::text)
           AND NOT (stored.position <= (SELECT through_position FROM session_events_stored_as_jsonb)
                    AND os_audit_same_json_value(stored.payload, e.payload)))
    ORDER BY e.ordinal
    LIMIT 1`;
}
