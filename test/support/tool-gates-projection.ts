import { sql } from 'kysely';
import { builtInProjections } from '../../projections/index.js';
import { defineEventReads, field } from '../../src/projector/event-reads.js';
import { defineProjection } from '../../src/projector/projection.js';

/**
 * A projection for tests whose fold SQL has a bug: per session and tool, how many times it was
 * gated, upserted once per event. A batch holding two gates of one tool in one session fails
 * (SQLSTATE 21000, an upsert that meets its row twice), whichever session: the projection
 * halts, no session is stopped. Batches of one event fold it.
 */
export const toolGatesProjection = defineProjection<Record<string, number>>({
  name: 'tool_gates',
  version: 1,
  description: 'gates per session and tool, failing on a tool gated twice in one batch',
  migrations: {
    '0001-tables': {
      async up(db) {
        await sql`CREATE TABLE tool_gate_heads (session_id text PRIMARY KEY, last_seq bigint NOT NULL)`.execute(db);
        await sql`CREATE TABLE tool_gates (session_id text, tool text, gates bigint NOT NULL, PRIMARY KEY (session_id, tool))`.execute(db);
        await sql`CREATE VIEW tool_gates_json AS
          SELECT h.session_id, coalesce((SELECT json_object_agg(g.tool, g.gates ORDER BY g.tool) FROM tool_gates AS g WHERE g.session_id = h.session_id), '{}'::json) AS snapshot
          FROM tool_gate_heads AS h`.execute(db);
      },
    },
  },
  sessionHeads: 'tool_gate_heads',
  tables: ['tool_gates', 'tool_gate_heads'],
  views: ['tool_gates_json'],
  snapshotView: 'tool_gates_json',
  reads: defineEventReads({ tool_gated: { tool: field.string() } }),
  counters: {},
  foldStatements: ({ events, sessions }) => [
    sql`INSERT INTO tool_gate_heads AS h SELECT session_id, last_seq FROM ${sessions} AS s
        ON CONFLICT (session_id) DO UPDATE SET last_seq = excluded.last_seq`,
    sql`INSERT INTO tool_gates AS g SELECT session_id, tool, 1 FROM ${events} AS e
        ON CONFLICT (session_id, tool) DO UPDATE SET gates = g.gates + 1`,
  ],
  init: () => ({}),
  evolve: (state, event) => {
    const tool = event.fields['tool'] as string;
    state[tool] = (state[tool] ?? 0) + 1;
    return state;
  },
  toJson: (state) => Object.fromEntries(Object.entries(state).sort(([a], [b]) => (a < b ? -1 : 1))),
});

/** The built-in projections and the tool gates: the list of `--projections test/support/tool-gates-projection.ts`. */
export default [...builtInProjections, toolGatesProjection];
