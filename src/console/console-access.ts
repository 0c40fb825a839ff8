import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';

/**
 * What the console's database role may read beyond the dashboard views. A member of
 * `os_audit_reader` reads the views and the snapshot tables only. It reads no event bodies, so
 * no event JSON and no snapshot at an earlier seq, which is folded from the bodies. Nor does it
 * read the projector's bookkeeping (last error, events set aside).
 */
export interface ConsoleAccess {
  /** May read `session_events.payload`: event JSON, and folding a snapshot at a seq. */
  eventBodies: boolean;
  /** May read `projection_checkpoints`, `projection_leases` and `projection_errors` (what `readProjectionStatus` reads). */
  projectorTables: boolean;
}

/**
 * Asks the database what the connected role may read.
 *
 * @example
 * ```ts
 * const access = await readConsoleAccess(db);
 * if (!access.eventBodies) console.log('event bodies are private to this role');
 * ```
 */
export async function readConsoleAccess(db: Kysely<DB>): Promise<ConsoleAccess> {
  const { rows } = await sql<{ event_bodies: boolean; projector_tables: boolean }>`
    SELECT has_column_privilege('session_events', 'payload', 'SELECT')
             AND has_column_privilege('session_events', 'payload_text', 'SELECT') AS event_bodies,
           has_table_privilege('projection_checkpoints', 'SELECT')
             AND has_table_privilege('projection_leases', 'SELECT')
             AND has_table_privilege('projection_errors', 'SELECT')
             AND has_table_privilege('session_events', 'SELECT') AS projector_tables`.execute(db);
  return { eventBodies: rows[0]!.event_bodies, projectorTables: rows[0]!.projector_tables };
}
