import { type RawBuilder, sql } from 'kysely';
import type { EncodedEvent } from '../../events/encode-event.js';
import { columnsOf, eventColumnsSql } from './event-rows.js';

/**
 * Appends events to one session at whatever seq its log has reached, in one statement. The
 * upsert of the head row takes the row lock that serializes writers of the session. Then the
 * events take the seqs that follow the previous head. Returns the new head (the events got the
 * seqs up to it) and the transaction's id.
 */
export function appendAtHeadSql(sessionId: string, events: readonly EncodedEvent[]): RawBuilder<HeadReserved> {
  const columns = columnsOf(events);
  const count = events.length;
  return sql`
    WITH head AS (${moveHeadSql(sessionId, count)}),
    inserted AS (
      INSERT INTO session_events (session_id, seq, kind, turn, payload, payload_text)
      SELECT ${sessionId}, head.last_seq - ${count} + e.ordinal, e.kind, e.turn, e.payload, e.payload_text
      FROM head, ROWS FROM (${eventColumnsSql(columns)}) WITH ORDINALITY AS e(kind, turn, payload, payload_text, ordinal)
      ORDER BY e.ordinal
    )
    SELECT last_seq, pg_current_xact_id()::text AS transaction_id FROM head`;
}

/** A session's new head, and the transaction that moved it (to learn its fate should the connection drop at commit). */
export interface HeadReserved {
  last_seq: number;
  transaction_id: string;
}

/**
 * Moves a session's head `count` seqs on (creating the session if new) and returns the new
 * head and the transaction's id. The caller then stores its events at the seqs up to it, in the
 * same transaction: its row lock on the head keeps the session's other writers waiting.
 */
export function reserveSeqsSql(sessionId: string, count: number): RawBuilder<HeadReserved> {
  return sql`WITH head AS (${moveHeadSql(sessionId, count)}) SELECT last_seq, pg_current_xact_id()::text AS transaction_id FROM head`;
}

/**
 * The upsert of {@link reserveSeqsSql}, returning the new `last_seq`. The transaction id is
 * asked outside it: Citus refuses it in a RETURNING, and outside it gives the coordinator's,
 * which the events' `transaction_id` also hold. Alone, it is what a writer on Citus sends
 * (see {@link insertEventsSql}).
 */
export function moveHeadSql(sessionId: string, count: number): RawBuilder<{ last_seq: number }> {
  return sql`
    INSERT INTO sessions AS s (session_id, last_seq)
    VALUES (${sessionId}, ${count - 1})
    ON CONFLICT (session_id) DO UPDATE
      SET last_seq = s.last_seq + ${count}
    RETURNING last_seq`;
}

/**
 * Moves a session's head from `expectedSeq` (-1: a session without events) `count` seqs on
 * and returns the new `last_seq`; no row when the log ends elsewhere.
 */
export function moveHeadFromSql(sessionId: string, expectedSeq: number, count: number): RawBuilder<{ last_seq: number }> {
  const lastSeq = expectedSeq + count;
  return expectedSeq === -1
    ? sql`INSERT INTO sessions (session_id, last_seq) VALUES (${sessionId}, ${lastSeq}) ON CONFLICT (session_id) DO NOTHING RETURNING last_seq`
    : sql`UPDATE sessions SET last_seq = ${lastSeq} WHERE session_id = ${sessionId} AND last_seq = ${expectedSeq} RETURNING last_seq`;
}

/**
 * One session's events at the seqs from `firstSeq` on, as a multi-row `INSERT … VALUES`: what
 * a writer sends on Citus after the head moved ({@link moveHeadSql}, {@link moveHeadFromSql}).
 * Plain values let Citus route the statement to the session's shard alone, with no two-phase
 * commit and with refusals keeping their SQLSTATE.
 * Why: docs/design/citus-writes.md
 */
export function insertEventsSql(sessionId: string, firstSeq: number, events: readonly EncodedEvent[]): RawBuilder<unknown> {
  const rows = events.map(
    (event, index) =>
      sql`(${sessionId}, ${firstSeq + index}::bigint, ${event.kind}, ${event.turn}::bigint, ${event.payload}::json, ${event.payloadText}::text)`,
  );
  return sql`INSERT INTO session_events (session_id, seq, kind, turn, payload, payload_text) VALUES ${sql.join(rows)}`;
}
