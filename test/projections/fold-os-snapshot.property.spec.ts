import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { KnownEventKind, KnownSessionEvent, SessionEvent } from '../../src/events/session-event.js';
import { validateEvent } from '../../src/events/validate-event.js';
import {
  BUDGET_EXCEEDED_RECORD_KEYS,
  foldOsSnapshot,
  OS_SNAPSHOT_KEYS,
  PROCESS_RECORD_KEYS,
  SIGNAL_RECORD_KEYS,
  SUSPEND_RECORD_KEYS,
  type OsSnapshot,
  type ProcessRecord,
} from '../../projections/os-snapshot/index.js';
import { parseOsSnapshot, serializeOsSnapshot } from '../../src/deprecated-os-snapshot.js';
import {
  arbitraryEvent,
  arbitraryNonSnapshotEvent,
  arbitrarySessionLog,
  type WireEvent,
} from '../support/arbitrary-events.js';

/**
 * Properties of the reference fold against a model written straight from the spec
 * (section 3), over logs of valid events of every kind, unknown kinds included.
 */

const RUNS = { numRuns: 200 };

/** A log as the fold receives it: every event validated (defaults filled in). */
const validatedLog = arbitrarySessionLog().map((log) => log.map((event) => validateEvent(event)));

type EventOf<K extends KnownEventKind> = Extract<KnownSessionEvent, { kind: K }>;

function ofKind<K extends KnownEventKind>(events: readonly SessionEvent[], kind: K): EventOf<K>[] {
  return events.filter((event): event is EventOf<K> => event.kind === kind);
}

const COUNTERS = [
  ['page_out_count', 'page_out'],
  ['page_in_count', 'page_in'],
  ['tool_gated_count', 'tool_gated'],
  ['memory_written_count', 'memory_written'],
  ['memory_queried_count', 'memory_queried'],
  ['memory_validation_failed_count', 'memory_validation_failed'],
  ['memory_retrieval_result_count', 'memory_retrieval_result'],
] as const satisfies readonly (readonly [keyof OsSnapshot, KnownEventKind])[];

describe('arbitraries', () => {
  it('(a) every generated event passes validateEvent', () => {
    fc.assert(
      fc.property(arbitraryEvent(), (event) => {
        validateEvent(event);
      }),
      { numRuns: 2_000 },
    );
  });

  it('(a) … also with strings PostgreSQL cannot store, outside the fields the snapshot reads', () => {
    fc.assert(
      fc.property(arbitraryEvent({ hostileStrings: true }), (event) => {
        validateEvent(event);
      }),
      { numRuns: 1_000 },
    );
  });

  it('(a) validateEvent keeps every field of a generated event', () => {
    fc.assert(
      fc.property(arbitraryEvent(), (event: WireEvent) => {
        const validated = validateEvent(event);
        for (const key of Object.keys(event)) {
          expect(validated[key]).toBe(event[key]);
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('foldOsSnapshot properties', () => {
  it('(b) each counter is the number of events of its kind', () => {
    fc.assert(
      fc.property(validatedLog, (log) => {
        const snapshot = foldOsSnapshot(log);
        for (const [counter, kind] of COUNTERS) {
          expect(snapshot[counter], counter).toBe(ofKind(log, kind).length);
        }
      }),
      RUNS,
    );
  });

  it('(c) signals and budget_exceeded are the events of their kind, in order, as records', () => {
    fc.assert(
      fc.property(validatedLog, (log) => {
        const snapshot = foldOsSnapshot(log);
        expect(snapshot.signals).toEqual(
          ofKind(log, 'signal_disposed').map((e) => ({
            turn: e.turn,
            signal_id: e.signal_id,
            disposition: e.disposition,
            queue_depth: e.queue_depth,
          })),
        );
        expect(snapshot.budget_exceeded).toEqual(
          ofKind(log, 'budget_exceeded').map((e) => ({ turn: e.turn, budget: e.budget })),
        );
      }),
      RUNS,
    );
  });

  it('(d) process_by_agent: distinct agents in first-appearance order, each from its last event', () => {
    fc.assert(
      fc.property(validatedLog, (log) => {
        const changes = ofKind(log, 'agent_process_changed');
        const order: string[] = [];
        for (const e of changes) {
          if (!order.includes(e.agent_id)) order.push(e.agent_id);
        }
        const expected: ProcessRecord[] = order.map((agentId) => {
          const last = changes.filter((e) => e.agent_id === agentId).at(-1)!;
          return {
            turn: last.turn,
            agent_id: last.agent_id,
            parent_session_id: last.parent_session_id,
            state: last.state,
          };
        });
        expect(foldOsSnapshot(log).process_by_agent).toEqual(expected);
      }),
      RUNS,
    );
  });

  it('(d) a missing state reads as "running"', () => {
    fc.assert(
      fc.property(arbitrarySessionLog({ kinds: ['agent_process_changed'], maxLength: 20 }), (wire) => {
        const snapshot = foldOsSnapshot(wire.map((event) => validateEvent(event)));
        const lastByAgent = new Map(wire.map((event) => [event['agent_id'], event]));
        for (const record of snapshot.process_by_agent) {
          expect(record.state).toBe(lastByAgent.get(record.agent_id)?.['state'] ?? 'running');
        }
      }),
      RUNS,
    );
  });

  it('(e) last_suspend and last_resumed_turn come from the last event of their kind, or are null', () => {
    fc.assert(
      fc.property(validatedLog, (log) => {
        const snapshot = foldOsSnapshot(log);
        const suspend = ofKind(log, 'suspended').at(-1);
        expect(snapshot.last_suspend).toEqual(
          suspend === undefined ? null : { turn: suspend.turn, reason: suspend.reason, pending_calls: suspend.pending_calls },
        );
        expect(snapshot.last_resumed_turn).toBe(ofKind(log, 'resumed').at(-1)?.turn ?? null);
      }),
      RUNS,
    );
  });

  it('(f) fold(b, fold(a)) equals fold(a ++ b), and the starting snapshot is not mutated', () => {
    fc.assert(
      fc.property(validatedLog, validatedLog, (a, b) => {
        const first = foldOsSnapshot(a);
        const before = structuredClone(first);
        const continued = foldOsSnapshot(b, first);
        expect(continued).toEqual(foldOsSnapshot([...a, ...b]));
        expect(first).toEqual(before);
        expect(serializeOsSnapshot(first)).toBe(serializeOsSnapshot(before));
      }),
      RUNS,
    );
  });

  it('(f) folding a log in any number of pieces equals folding it whole', () => {
    fc.assert(
      fc.property(validatedLog, fc.array(fc.nat(), { maxLength: 8 }), (log, cuts) => {
        const points = [...new Set(cuts.map((c) => c % (log.length + 1)))].sort((x, y) => x - y);
        let snapshot: OsSnapshot | undefined;
        let start = 0;
        for (const end of [...points, log.length]) {
          snapshot = foldOsSnapshot(log.slice(start, end), snapshot);
          start = end;
        }
        expect(snapshot).toEqual(foldOsSnapshot(log));
      }),
      RUNS,
    );
  });

  it('(g) inserting events of kinds without a snapshot effect anywhere changes nothing', () => {
    const insertions = fc.array(fc.tuple(fc.nat(), arbitraryNonSnapshotEvent()), { maxLength: 30 });
    fc.assert(
      fc.property(validatedLog, insertions, (log, inserts) => {
        const padded = [...log];
        for (const [at, event] of inserts) {
          padded.splice(at % (padded.length + 1), 0, validateEvent(event));
        }
        expect(serializeOsSnapshot(foldOsSnapshot(padded))).toBe(serializeOsSnapshot(foldOsSnapshot(log)));
        expect(foldOsSnapshot(padded)).toEqual(foldOsSnapshot(log));
      }),
      RUNS,
    );
  });

  it('(h) the serialized snapshot has the spec’s key order at every level and reads back equal', () => {
    fc.assert(
      fc.property(validatedLog, fc.constantFrom(undefined, 0, 2, 4), (log, indent) => {
        const snapshot = foldOsSnapshot(log);
        const text = serializeOsSnapshot(snapshot, indent === undefined ? undefined : { indent });
        const parsed = JSON.parse(text) as Record<string, unknown>;

        expect(Object.keys(parsed)).toEqual(OS_SNAPSHOT_KEYS);
        if (parsed['last_suspend'] !== null) {
          expect(Object.keys(parsed['last_suspend'] as object)).toEqual(SUSPEND_RECORD_KEYS);
        }
        for (const record of parsed['process_by_agent'] as object[]) {
          expect(Object.keys(record)).toEqual(PROCESS_RECORD_KEYS);
        }
        for (const record of parsed['signals'] as object[]) {
          expect(Object.keys(record)).toEqual(SIGNAL_RECORD_KEYS);
        }
        for (const record of parsed['budget_exceeded'] as object[]) {
          expect(Object.keys(record)).toEqual(BUDGET_EXCEEDED_RECORD_KEYS);
        }

        expect(parsed).toEqual(snapshot);
        expect(parseOsSnapshot(text)).toEqual(snapshot);
        if (indent === undefined || indent === 0) {
          expect(text).toBe(JSON.stringify(parsed));
        }
      }),
      RUNS,
    );
  });
});
