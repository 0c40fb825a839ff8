import { type Kysely, sql } from 'kysely';

/**
 * A CHECKPOINT of every node that holds the database's data: the server, and on a Citus
 * coordinator each worker as well (Citus does not pass CHECKPOINT on, and the shards' writes
 * are the workers'). Run before each measured step, so that no earlier write is flushed on its
 * time, on one server or on a cluster alike. Statements for a simple query, one at a time.
 */
export const CHECKPOINT_EVERY_NODE = [
  'CHECKPOINT',
  `DO $$ BEGIN
     IF EXISTS (SELECT FROM pg_extension WHERE extname = 'citus') THEN
       IF NOT (SELECT bool_and(success) FROM run_command_on_workers('CHECKPOINT')) THEN
         RAISE EXCEPTION 'CHECKPOINT failed on a worker';
       END IF;
     END IF;
   END $$`,
] as const;

/** {@link CHECKPOINT_EVERY_NODE} on a pg client. */
export async function checkpointClient(client: { query(text: string): Promise<unknown> }): Promise<void> {
  for (const statement of CHECKPOINT_EVERY_NODE) await client.query(statement);
}

/** {@link CHECKPOINT_EVERY_NODE} on a Kysely instance. */
export async function checkpointDatabase(db: Kysely<any>): Promise<void> {
  for (const statement of CHECKPOINT_EVERY_NODE) await sql.raw(statement).execute(db);
}
