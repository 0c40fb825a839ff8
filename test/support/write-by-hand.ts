import { type Kysely, sql } from 'kysely';
import { storeIsDistributed } from '../../src/db/distributed-store.js';
import type { DB } from '../../src/db/schema.js';

/**
 * Writes an event around the store, as a superuser's hand-written INSERT would, moving the
 * session's head to it; returns its position. The database refuses a hole (a head moved past
 * a missing seq) to every writer: the superuser gets one past that check by turning its
 * ordinary triggers off (`session_replication_role = replica`), as a repair or a logical
 * replica does. On Citus the triggers fire on the workers: the setting goes to the workers'
 * connections of the transaction too (`citus.propagate_set_commands`).
 */
export async function writeByHand(db: Kysely<DB>, sessionId: string, seq: number, payload: string): Promise<number> {
  return db.transaction().execute(async (trx) => {
    if (await storeIsDistributed(trx)) await sql`SET LOCAL citus.propagate_set_commands = 'local'`.execute(trx);
    await sql`SET LOCAL session_replication_role = replica`.execute(trx);
    await sql`INSERT INTO sessions (session_id, last_seq) VALUES (${sessionId}, ${seq})
              ON CONFLICT (session_id) DO UPDATE SET last_seq = excluded.last_seq`.execute(trx);
    const { rows } = await sql<{ position: number }>`
      INSERT INTO session_events (session_id, seq, kind, turn, payload)
      VALUES (${sessionId}, ${seq}, ${payload}::json ->> 'kind', os_audit_turn_as_written(${payload}::json), ${payload}::json) RETURNING position`.execute(trx);
    return rows[0]!.position;
  });
}
