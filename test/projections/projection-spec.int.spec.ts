import { AssertionError } from 'node:assert';
import { describe, expect, it } from 'vitest';
import type { JsonObject, JsonValue } from '../../src/json/json-value.js';
import { ProjectionSpec } from '../../src/testing/projection-spec.js';
import { kindCountsProjection } from '../support/kind-counts-projection.js';
import { suspensionsProjection } from '../support/suspensions-projection.js';
import { useTestDatabase } from '../support/test-database.js';

/** The test kit for projection authors, on the tests' projections (the built-ins' own tests use it too). */
const testDb = useTestDatabase({ migrate: false });

const suspended = (turn: unknown): JsonObject => ({ kind: 'suspended', turn: turn as JsonValue, reason: 'ask_user', pending_calls: [] });

describe('ProjectionSpec', () => {
  it('takes events as the runtime wrote them: exact text, numbers as written', async () => {
    await ProjectionSpec.for(kindCountsProjection, { db: testDb.db })
      .given({ a: ['{"kind":"suspended","turn":1.0,"reason":"ask_user","pending_calls":[]}', '{"kind":"resumed","turn":2}'] })
      .then({ a: { suspended: 1, resumed: 1 } });
  });

  it('folds kinds read without fields, across batches and sessions', async () => {
    await ProjectionSpec.for(kindCountsProjection, { db: testDb.db })
      .given({ a: [suspended(1)], b: [suspended(1), { kind: 'resumed', turn: 2 }] })
      .when({ a: [{ kind: 'resumed', turn: 2 }, suspended(3)] })
      .then({ a: { suspended: 2, resumed: 1 }, b: { suspended: 1, resumed: 1 } });
  });

  it('checks a SQL-only projection against its SQL alone', async () => {
    await ProjectionSpec.for(suspensionsProjection, { db: testDb.db }).given({ a: [suspended(1), suspended(2)] }).then({ a: { suspended: 2 } });
  });

  it('fails with the differences of the SQL snapshot and of the in-memory fold from the expected one', async () => {
    const failing = ProjectionSpec.for(kindCountsProjection, { db: testDb.db }).given({ a: [suspended(1)] }).then({ a: { suspended: 2, resumed: 0 } });
    const error = await failing.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AssertionError);
    expect((error as Error).message).toMatch(/^projection kind_counts: 2 difference\(s\)\na: .*expected 2.*sql 1.*\na: .*expected 2.*fold 1/);
  });

  it('fails when the keys come in another order: a snapshot keeps its keys in order', async () => {
    const failing = ProjectionSpec.for(kindCountsProjection, { db: testDb.db }).given({ a: [suspended(1)] }).then({ a: { resumed: 0, suspended: 1 } });
    await expect(failing).rejects.toThrow(/a: key order: expected \{"resumed":0,"suspended":1\}, sql \{"suspended":1,"resumed":0\}/);
  });
});
