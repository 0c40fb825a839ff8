import { type Kysely, sql } from 'kysely';
import type { DB } from '../../src/db/schema.js';
import { pastTheTriggers } from './past-the-triggers.js';

/** A row of `session_events` as a hand-written INSERT gives it. */
export interface HandWrittenRow {
  sessionId: string;
  seq: number;
  kind: string;
  /** JSON text for the `payload` column. */
  payload: string;
  payloadText: string | null;
}

/**
 * Stores the row as it is and moves its session's head to it, past every trigger that checks a
 * write ({@link pastTheTriggers}). The CHECK constraints still hold (`payload` is an object of
 * the row's kind), but none on `payload_text`. So it stores what a hostile writer once could: a
 * stored text that is not JSON, not an object, or not of its row's kind.
 */
export async function writeAroundChecks(db: Kysely<DB>, row: HandWrittenRow): Promise<void> {
  await pastTheTriggers(db, async (trx) => {
    await sql`INSERT INTO sessions (session_id, last_seq) VALUES (${row.sessionId}, ${row.seq})
              ON CONFLICT (session_id) DO UPDATE SET last_seq = excluded.last_seq`.execute(trx);
    await sql`INSERT INTO session_events (session_id, seq, kind, payload, payload_text)
              VALUES (${row.sessionId}, ${row.seq}, ${row.kind}, ${row.payload}::json, ${row.payloadText})`.execute(trx);
  });
}
