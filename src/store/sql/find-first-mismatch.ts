import { type RawBuilder, sql } from 'kysely';
import { type EventRows, eventColumnsSql } from './event-rows.js';

/**
 * Of rows that should already be stored (a re-import), the first one (by its index in `rows`,
 * from 1) that is missing or stored with a different body; no row when all match. Bodies are
 * compared as jsonb values (key order and white space do not count) and by their exact text.
 */
export function findFirstMismatchSql(rows: EventRows): RawBuilder<{ ordinal: number }> {
  return sql`
    SELECT e.ordinal::int AS ordinal
    FROM ROWS FROM (unnest(${rows.sessionIds}::text[]), unnest(${rows.seqs}::bigint[]), ${eventColumnsSql(rows)})
         WITH ORDINALITY AS e(session_id, seq, kind, turn, payload, payload_text, ordinal)
    LEFT JOIN session_events AS stored ON stored.session_id = e.session_id AND stored.seq = e.seq
    WHERE stored.seq IS NULL
       OR stored.payload <> e.payload::jsonb
       OR stored.payload_text IS DISTINCT FROM e.payload_text
    ORDER BY e.ordinal
    LIMIT 1`;
}
