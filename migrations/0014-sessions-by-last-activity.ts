import { type Kysely, sql } from 'kysely';

/**
 * An index of the sessions' heads by last activity, for the web console's session list. The
 * list pages through millions of sessions newest first by keyset, `(last_recorded_at,
 * session_id) < (last row of the page)`. Each page reads one short range of this index, never
 * an OFFSET. The
 * heads are updated by every append, so the index costs one entry update per append
 * transaction per session.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX sessions_last_recorded_at_idx ON sessions (last_recorded_at, session_id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX sessions_last_recorded_at_idx`.execute(db);
}
