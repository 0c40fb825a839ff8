import { AssertionError } from 'node:assert';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { osSnapshotProjection } from '../../projections/os-snapshot/os-snapshot-projection.js';
import { osSnapshotV0260Projection } from '../../projections/os-snapshot-v0-2-60/index.js';
import type { JsonObject, JsonValue } from '../../src/json/json-value.js';
import { parseJson } from '../../src/json/parse-json.js';
import { ProjectionSpec } from '../../src/testing/projection-spec.js';
import { kindCountsProjection } from '../support/kind-counts-projection.js';
import { suspensionsProjection } from '../support/suspensions-projection.js';
import { asRustReadsIt, V0260_GOLDEN_CASES, v0260Fixture } from '../support/v0-2-60-fixtures.js';
import { useTestDatabase } from '../support/test-database.js';

/** The test kit for projection authors, used on both built-in projections and on two of the tests'. */
const testDb = useTestDatabase({ migrate: false });

function osSnapshotFixture(name: string): JsonValue {
  return parseJson(readFileSync(new URL(`../fixtures/os-snapshot/${name}`, import.meta.url), 'utf8'));
}

const suspended = (turn: unknown): JsonObject => ({ kind: 'suspended', turn: turn as JsonValue, reason: 'ask_user', pending_calls: [] });

describe('ProjectionSpec', () => {
  it.each([
    ['ask_user', 'events_ask_user.json', 'os_snapshot_ask_user.json'],
    ['spawn lifecycle', 'events_spawn_lifecycle.json', 'os_snapshot_spawn_lifecycle.json'],
  ])('os_snapshot: the seed fixture %s, folded in one batch and in two', async (_, eventsFile, snapshotFile) => {
    const spec = ProjectionSpec.for(osSnapshotProjection, { db: testDb.db });
    const events = osSnapshotFixture(eventsFile) as JsonObject[];
    const snapshot = osSnapshotFixture(snapshotFile);
    await spec.given({ s: events }).then({ s: snapshot });
    const half = events.length >> 1;
    await spec.given({ s: events.slice(0, half) }).when({ s: events.slice(half) }).then({ s: snapshot });
  });

  it.each(V0260_GOLDEN_CASES)('os_snapshot_v0_2_60: the runtime fixture %s', async (_, eventsFile, snapshotFile) => {
    await ProjectionSpec.for(osSnapshotV0260Projection, { db: testDb.db })
      .given({ s: v0260Fixture(eventsFile) as JsonObject[] })
      .then({ s: asRustReadsIt(v0260Fixture(snapshotFile)) });
  });

  it('stops a session at the event the projection cannot read, as expected, and fails where it was not expected', async () => {
    const spec = ProjectionSpec.for(osSnapshotProjection, { db: testDb.db });
    const stopped = osSnapshotFixture('os_snapshot_ask_user.json') as JsonObject;
    const events = osSnapshotFixture('events_ask_user.json') as JsonObject[];
    await spec.given({ s: [...events, suspended('four')] }).then({ s: stopped }, { stopped: { s: events.length } });
    await expect(spec.given({ s: [...events, suspended('four')] }).then({ s: stopped })).rejects.toThrow(/s: the projector stopped it at seq 3 \(.*turn/);
  });

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
});
