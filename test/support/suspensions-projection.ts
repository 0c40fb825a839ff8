import { sql } from 'kysely';
import { builtInProjections } from '../../projections/index.js';
import { defineEventReads } from '../../src/projector/event-reads.js';
import { defineProjection } from '../../src/projector/projection.js';

/**
 * A SQL-only projection for tests that reads no kind and counts one: suspensions per session.
 * It has no in-memory fold, and its batch reads no field of any event.
 */
export const suspensionsProjection = defineProjection({
  name: 'suspensions',
  version: 1,
  description: 'suspensions per session, in SQL alone',
  migrations: {
    '0001-tables': {
      async up(db) {
        await sql`CREATE TABLE suspensions (session_id text PRIMARY KEY, last_seq bigint NOT NULL, suspended bigint NOT NULL)`.execute(db);
        await sql`CREATE VIEW suspensions_json AS SELECT session_id, json_build_object('suspended', suspended) AS snapshot FROM suspensions`.execute(db);
      },
    },
  },
  sessionHeads: 'suspensions',
  tables: ['suspensions'],
  views: ['suspensions_json'],
  snapshotView: 'suspensions_json',
  reads: defineEventReads({}),
  counters: { suspended: 'suspended' },
  foldStatements: ({ sessions }) => [
    sql`INSERT INTO suspensions AS h SELECT session_id, last_seq, suspended FROM ${sessions} AS s
        ON CONFLICT (session_id) DO UPDATE SET last_seq = excluded.last_seq, suspended = h.suspended + excluded.suspended`,
  ],
});

/** The built-in projections and the suspensions: the list of `--projections test/support/suspensions-projection.ts`. */
export default [...builtInProjections, suspensionsProjection];
