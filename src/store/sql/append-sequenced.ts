import { type RawBuilder, sql } from 'kysely';
import { type EventRows, eventColumnsSql } from './event-rows.js';

/**
 * The CTEs `created` and `advanced` that move the heads of the sessions in `batch`, a CTE of
 * `session_id, first_seq, last_seq`. A session advances only where its stored head is exactly
 * one before its first seq; a new session, where that first seq is 0.
 */
function moveHeadsSql(): RawBuilder<unknown> {
  return sql`
    created AS (
      INSERT INTO sessions (session_id, last_seq)
      SELECT session_id, last_seq FROM batch WHERE first_seq = 0
      ON CONFLICT (session_id) DO NOTHING
      RETURNING session_id
    ),
    advanced AS (
      UPDATE sessions AS s
      SET last_seq = b.last_seq
      FROM batch AS b
      WHERE s.session_id = b.session_id AND s.last_seq = b.first_seq - 1
      RETURNING s.session_id
    )`;
}

/**
 * Appends rows whose seqs the caller chose, for any number of sessions, in one statement.
 * Heads move as {@link moveHeadsSql} says; rows of a session that does not advance are not
 * inserted. Returns how many rows were inserted and which sessions advanced.
 * Each session's rows must be contiguous in seq.
 */
export function appendSequencedSql(rows: EventRows): RawBuilder<{ inserted: number; advanced: string[] }> {
  return sql`
    WITH incoming AS (
      SELECT *
      FROM ROWS FROM (unnest(${rows.sessionIds}::text[]), unnest(${rows.seqs}::bigint[]), ${eventColumnsSql(rows)})
        AS e(session_id, seq, kind, turn, payload, payload_text)
    ),
    batch AS (
      SELECT session_id, min(seq) AS first_seq, max(seq) AS last_seq
      FROM incoming
      GROUP BY session_id
    ),
    ${moveHeadsSql()},
    inserted AS (
      INSERT INTO session_events (session_id, seq, kind, turn, payload, payload_text)
      SELECT e.session_id, e.seq, e.kind, e.turn, e.payload, e.payload_text
      FROM incoming AS e
      WHERE e.session_id IN (SELECT session_id FROM created UNION ALL SELECT session_id FROM advanced)
      ORDER BY e.session_id, e.seq
      RETURNING 1
    )
    SELECT (SELECT count(*) FROM inserted) AS inserted,
           ARRAY(SELECT session_id FROM created UNION ALL SELECT session_id FROM advanced) AS advanced`;
}

/** Each session's first and last seq among rows (each session's rows contiguous in seq). */
export interface SessionSpans {
  sessionIds: string[];
  firstSeqs: number[];
  lastSeqs: number[];
}

/**
 * Moves the heads of sessions for rows that the caller then stores itself (with `COPY`), as
 * {@link moveHeadsSql} says, and returns which sessions advanced. The heads stay locked until
 * the transaction ends, so no other writer can store the same seqs meanwhile; the database
 * checks at the commit that each head is its session's last stored event (migration 0009).
 */
export function advanceHeadsSql(spans: SessionSpans): RawBuilder<{ advanced: string[] }> {
  return sql`
    WITH batch AS (
      SELECT * FROM unnest(${spans.sessionIds}::text[], ${spans.firstSeqs}::bigint[], ${spans.lastSeqs}::bigint[])
        AS b(session_id, first_seq, last_seq)
    ),
    ${moveHeadsSql()}
    SELECT ARRAY(SELECT session_id FROM created UNION ALL SELECT session_id FROM advanced) AS advanced`;
}
