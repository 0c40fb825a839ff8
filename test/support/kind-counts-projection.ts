import { sql } from 'kysely';
import { defineEventReads } from '../../src/projector/event-reads.js';
import { defineProjection } from '../../src/projector/projection.js';

/**
 * A projection for tests that reads kinds and none of their fields: per session, how many times
 * it was suspended and resumed. What counts events by kind alone must fold as any other does.
 */
export const kindCountsProjection = defineProjection<{ suspended: number; resumed: number }>({
  name: 'kind_counts',
  version: 1,
  description: 'suspensions and resumptions per session, read by kind alone',
  migrations: {
    '0001-tables': {
      async up(db) {
        await sql`CREATE TABLE kind_count_heads (session_id text PRIMARY KEY, last_seq bigint NOT NULL, suspended bigint NOT NULL, resumed bigint NOT NULL)`.execute(db);
        await sql`CREATE VIEW kind_counts_json AS
          SELECT session_id, json_build_object('suspended', suspended, 'resumed', resumed) AS snapshot FROM kind_count_heads`.execute(db);
      },
    },
  },
  sessionHeads: 'kind_count_heads',
  tables: ['kind_count_heads'],
  views: ['kind_counts_json'],
  snapshotView: 'kind_counts_json',
  reads: defineEventReads({ suspended: {}, resumed: {} }),
  counters: { suspended: 'suspended', resumed: 'resumed' },
  foldStatements: ({ sessions }) => [
    sql`INSERT INTO kind_count_heads AS h SELECT session_id, last_seq, suspended, resumed FROM ${sessions} AS s
        ON CONFLICT (session_id) DO UPDATE SET last_seq = excluded.last_seq, suspended = h.suspended + excluded.suspended, resumed = h.resumed + excluded.resumed`,
  ],
  init: () => ({ suspended: 0, resumed: 0 }),
  evolve: (state, event) => {
    if (event.kind === 'suspended') state.suspended += 1;
    else state.resumed += 1;
    return state;
  },
  toJson: (state) => ({ ...state }),
});
