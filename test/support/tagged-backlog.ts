import type { EventStore } from '../../src/store/event-store.js';
import { type AppendUnit, taggedEvent } from './append-journal.js';

/**
 * Appends `sessions` new sessions of `eventsPerSession` tagged events each (one append per
 * session, four at a time) and returns them as acknowledged units for the final check.
 *
 * @example
 * ```ts
 * const units = await appendTaggedBacklog(new EventStore(db), 'backlog', 100, 1000); // 100,000 events
 * ```
 */
export async function appendTaggedBacklog(store: EventStore, prefix: string, sessions: number, eventsPerSession: number): Promise<AppendUnit[]> {
  const units: AppendUnit[] = Array.from({ length: sessions }, (_, s) => {
    const id = `${prefix}-${String(s).padStart(4, '0')}`;
    return { id, sessionId: id, texts: Array.from({ length: eventsPerSession }, (_, i) => JSON.stringify(taggedEvent(id, i))) };
  });
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < units.length) {
        const unit = units[next++]!;
        unit.seqs = await store.append(unit.sessionId, unit.texts.map((_, i) => taggedEvent(unit.id, i)));
        unit.ackedAt = Date.now();
      }
    }),
  );
  return units;
}
