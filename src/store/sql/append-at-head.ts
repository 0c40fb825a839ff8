import { type RawBuilder, sql } from 'kysely';
import type { EncodedEvent } from '../encode-event.js';
import { columnsOf } from './event-rows.js';

/**
 * Appends events to one session at whatever seq its log has reached, in one statement: the
 * upsert of the head row takes the row lock that serializes writers of the session, then the
 * events take the seqs that follow the previous head.
 */
export function appendAtHeadSql(sessionId: string, events: readonly EncodedEvent[]): RawBuilder<{ seq: number }> {
  const columns = columnsOf(events);
  const count = events.length;
  return sql`
    WITH head AS (
      INSERT INTO sessions AS s (session_id, last_seq)
      VALUES (${sessionId}, ${count - 1})
      ON CONFLICT (session_id) DO UPDATE
        SET last_seq = s.last_seq + ${count}, last_recorded_at = now()
      RETURNING last_seq
    )
    INSERT INTO session_events (session_id, seq, kind, turn, payload, payload_text, validated)
    SELECT ${sessionId}, head.last_seq - ${count} + e.ordinal, e.kind, e.turn, e.payload, e.payload_text, true
    FROM head,
         unnest(${columns.kinds}::text[], ${columns.turns}::bigint[], ${columns.payloads}::jsonb[],
                ${columns.payloadTexts}::text[]) WITH ORDINALITY AS e(kind, turn, payload, payload_text, ordinal)
    ORDER BY e.ordinal
    RETURNING seq`;
}
