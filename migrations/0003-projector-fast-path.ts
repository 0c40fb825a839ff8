import { type Kysely, sql } from 'kysely';

/**
 * `session_events.validated`: true for events os-audit's own writers checked against the
 * contract before storing them. A row written around them (by hand, by another tool) is false,
 * and the projector checks it in SQL before folding it; the others it need not check again.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE session_events ADD COLUMN validated boolean NOT NULL DEFAULT false`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE session_events DROP COLUMN validated`.execute(db);
}
