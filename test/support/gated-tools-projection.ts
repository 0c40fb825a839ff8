import { sql } from 'kysely';
import { builtInProjections } from '../../projections/index.js';
import { defineEventReads, field } from '../../src/projector/event-reads.js';
import { defineProjection } from '../../src/projector/projection.js';

/**
 * A small projection for tests: per session, the tools gated in log order, and how many. Its
 * table refuses the tool "boom" (a CHECK), so that its SQL can fail on events its reads accept:
 * a fault of the projection, which must stop only that session.
 */
export const gatedToolsProjection = defineProjection<{ gated: number; tools: string[] }>({
  name: 'gated_tools',
  version: 1,
  description: 'tools gated per session, refusing "boom"',
  migrations: {
    '0001-tables': {
      async up(db) {
        await sql`CREATE TABLE gated_tool_heads (session_id text PRIMARY KEY, last_seq bigint NOT NULL, gated bigint NOT NULL)`.execute(db);
        await sql`CREATE TABLE gated_tools (session_id text, seq bigint, tool text CHECK (tool <> 'boom'), PRIMARY KEY (session_id, seq))`.execute(db);
        await sql`CREATE VIEW gated_tools_json AS
          SELECT h.session_id, json_build_object('gated', h.gated, 'tools',
            coalesce((SELECT json_agg(t.tool ORDER BY t.seq) FROM gated_tools AS t WHERE t.session_id = h.session_id), '[]'::json)) AS snapshot
          FROM gated_tool_heads AS h`.execute(db);
      },
    },
  },
  sessionHeads: 'gated_tool_heads',
  tables: ['gated_tools', 'gated_tool_heads'],
  views: ['gated_tools_json'],
  snapshotView: 'gated_tools_json',
  reads: defineEventReads({ tool_gated: { tool: field.string() } }),
  counters: { gated: 'tool_gated' },
  foldStatements: ({ events, sessions }) => [
    sql`INSERT INTO gated_tool_heads AS h SELECT session_id, last_seq, gated FROM ${sessions} AS s
        ON CONFLICT (session_id) DO UPDATE SET last_seq = excluded.last_seq, gated = h.gated + excluded.gated`,
    sql`INSERT INTO gated_tools SELECT session_id, seq, tool FROM ${events} AS e`,
  ],
  init: () => ({ gated: 0, tools: [] }),
  evolve: (state, event) => {
    state.gated += 1;
    state.tools.push(event.fields['tool'] as string);
    return state;
  },
  toJson: (state) => ({ gated: state.gated, tools: [...state.tools] }),
});

/** The built-in projections and the gated tools: the list of `--projections test/support/gated-tools-projection.ts`. */
export default [...builtInProjections, gatedToolsProjection];
