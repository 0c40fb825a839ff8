import { describe, expect, it } from 'vitest';
import { builtInProjections } from '../../projections/index.js';
import type { JsonObject } from '../../src/json/json-value.js';
import { readEvent } from '../../src/projector/event-reads.js';
import { EventStore } from '../../src/store/event-store.js';
import { gatedToolsProjection } from '../support/gated-tools-projection.js';
import type { Projection } from '../../src/projector/projection.js';
import { useTestDatabase } from '../support/test-database.js';

/**
 * What a projection reads never changes what the store accepts (the contract, section 1): an
 * event that any projection finds unreadable, a field it requires missing or of another type,
 * is stored as it was written, and only that projection's session stops.
 */
const testDb = useTestDatabase();
const projections: readonly Projection[] = [...builtInProjections, gatedToolsProjection];

/** For every field a projection reads: the event without it, and with a value of no type it reads. */
function unreadableEvents(): { projection: string; event: JsonObject }[] {
  const found: { projection: string; event: JsonObject }[] = [];
  for (const projection of projections) {
    for (const [kind, fields] of Object.entries(projection.reads)) {
      for (const [name, read] of Object.entries(fields)) {
        if (read.lenient) continue;
        const wrong = { kind, turn: 1, [name]: { not: 'a value of its type' } };
        if (readEvent(projection.reads, wrong)?.problem) found.push({ projection: projection.name, event: wrong });
        const missing: JsonObject = { kind };
        if (readEvent(projection.reads, missing)?.problem) found.push({ projection: projection.name, event: missing });
      }
    }
  }
  return found;
}

describe('what the projections read', () => {
  it('never changes what the store accepts: every event a projection cannot read is stored as written', async () => {
    const events = unreadableEvents();
    expect(new Set(events.map((each) => each.projection))).toEqual(new Set(projections.map((projection) => projection.name)));
    const store = new EventStore(testDb.db);
    for (const [i, { event }] of events.entries()) {
      const sessionId = `unreadable-${i}`;
      expect(await store.append(sessionId, [event], { expectedSeq: -1 })).toEqual([0]);
      const stored: string[] = [];
      for await (const { text } of store.readSessionText(sessionId)) stored.push(text);
      expect(stored).toEqual([JSON.stringify(event)]);
    }
  });
});
