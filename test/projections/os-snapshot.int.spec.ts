import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { osSnapshotProjection } from '../../projections/os-snapshot/os-snapshot-projection.js';
import type { JsonObject, JsonValue } from '../../src/json/json-value.js';
import { parseJson } from '../../src/json/parse-json.js';
import { ProjectionSpec } from '../../src/testing/projection-spec.js';
import { useTestDatabase } from '../support/test-database.js';

/** The OS snapshot, given the seed's fixtures, folded by the SQL batch and in memory (the test kit). */
const testDb = useTestDatabase({ migrate: false });

function osSnapshotFixture(name: string): JsonValue {
  return parseJson(readFileSync(new URL(`../fixtures/os-snapshot/${name}`, import.meta.url), 'utf8'));
}

const suspended = (turn: unknown): JsonObject => ({ kind: 'suspended', turn: turn as JsonValue, reason: 'ask_user', pending_calls: [] });

describe('the OS snapshot projection', () => {
  it.each([
    ['ask_user', 'events_ask_user.json', 'os_snapshot_ask_user.json'],
    ['spawn lifecycle', 'events_spawn_lifecycle.json', 'os_snapshot_spawn_lifecycle.json'],
  ])('the seed fixture %s, folded in one batch and in two', async (_, eventsFile, snapshotFile) => {
    const spec = ProjectionSpec.for(osSnapshotProjection, { db: testDb.db });
    const events = osSnapshotFixture(eventsFile) as JsonObject[];
    const snapshot = osSnapshotFixture(snapshotFile);
    await spec.given({ s: events }).then({ s: snapshot });
    const half = events.length >> 1;
    await spec.given({ s: events.slice(0, half) }).when({ s: events.slice(half) }).then({ s: snapshot });
  });

  it('stops a session at the event the projection cannot read, as expected, and fails where it was not expected', async () => {
    const spec = ProjectionSpec.for(osSnapshotProjection, { db: testDb.db });
    const stopped = osSnapshotFixture('os_snapshot_ask_user.json') as JsonObject;
    const events = osSnapshotFixture('events_ask_user.json') as JsonObject[];
    await spec.given({ s: [...events, suspended('four')] }).then({ s: stopped }, { stopped: { s: events.length } });
    await expect(spec.given({ s: [...events, suspended('four')] }).then({ s: stopped })).rejects.toThrow(/s: the projector stopped it at seq 3 \(.*turn/);
  });
});
