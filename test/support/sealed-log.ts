import { type Kysely, sql } from 'kysely';
import type { DB } from '../../src/db/schema.js';
import type { JsonObject } from '../../src/json/json-value.js';
import type { EventStore } from '../../src/store/event-store.js';

/** The partitions of `session_events` by name: their bounds and table access method (heap, columnar). */
export async function partitions(db: Kysely<DB>) {
  const { rows } = await sql<{ name: string; bound: string; method: string }>`
    SELECT c.relname::text AS name, pg_get_expr(c.relpartbound, c.oid) AS bound, am.amname::text AS method
    FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid JOIN pg_am AS am ON am.oid = c.relam
    WHERE i.inhparent = 'session_events'::regclass ORDER BY c.relname`.execute(db);
  return rows;
}

/** Appends `events` in a transaction left open (its row lock on session_events held) until `commit()`. */
export async function appendLeftOpen(store: EventStore, sessionId: string, events: JsonObject[]): Promise<{ commit(): Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let stored!: () => void;
  const inside = new Promise<void>((resolve) => (stored = resolve));
  const transaction = store.transaction(async (trx) => {
    await trx.append(sessionId, events);
    stored();
    await released;
  });
  await inside;
  return {
    commit: async () => {
      release();
      await transaction;
    },
  };
}
