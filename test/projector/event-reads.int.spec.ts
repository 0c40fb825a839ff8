import { describe, expect, it } from 'vitest';
import { defineEventReads, field } from '../../src/projector/event-reads.js';

describe('defineEventReads', () => {
  it.each(['session_id', 'seq', 'kind', 'recorded_at', 'payload', 'payload_text', 'stand_in', 'position', 'prev_seq', 'needs_log', 'problem', 'rank'])(
    "refuses a field named %s, a column of the projector's rows",
    (name) => {
      expect(() => defineEventReads({ noted: { [name]: field.string() } })).toThrow(`event reads: field "${name}" of noted cannot be read under its own name (a column of the projector's rows)`);
    },
  );

  it('refuses a field named type_problem_…, which the SQL reading names its own columns', () => {
    expect(() => defineEventReads({ noted: { turn: field.u32(), type_problem_turn: field.string().orNull() } })).toThrow(
      'event reads: field "type_problem_turn" of noted cannot be read under its own name (names starting with "type_problem_" are the SQL reading\'s own)',
    );
  });
});
