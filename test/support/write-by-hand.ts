import { type Kysely, sql } from 'kysely';
import type { DB } from '../../src/db/schema.js';

/**
 * Writes an event around the store, as a hand-written INSERT would, moving the session's head
 * to it (a hole when that skips seqs); returns its position.
 */
export async function writeByHand(db: Kysely<DB>, sessionId: string, seq: number, payload: string): Promise<number> {
  await sql`INSERT INTO sessions (session_id, last_seq) VALUES (${sessionId}, ${seq})
            ON CONFLICT (session_id) DO UPDATE SET last_seq = excluded.last_seq`.execute(db);
  const { rows } = await sql<{ position: number }>`
    INSERT INTO session_events (session_id, seq, kind, payload)
    VALUES (${sessionId}, ${seq}, ${payload}::json ->> 'kind', ${payload}::json) RETURNING position`.execute(db);
  return rows[0]!.position;
}
