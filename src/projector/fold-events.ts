import { type EventObject, readEvent } from './event-reads.js';
import type { FoldedProjection } from './projection.js';

/** An event a projection could not read: where it stands among the events folded, and why. */
export interface UnreadableEvent {
  index: number;
  problem: string;
}

/** What {@link foldEvents} did. */
export interface EventsFold<State> {
  state: State;
  /** Events consumed: folded, passed over or set aside (all of them unless it stopped). */
  consumed: number;
  /** The event it stopped at, if any: the state is the fold of the events before it. */
  stoppedAt: UnreadableEvent | null;
}

export interface FoldEventsOptions {
  /** Set this event aside instead of stopping at it, when it is unreadable (`--skip-invalid`). */
  skip?: (index: number) => boolean;
}

/** The parts of a projection its in-memory fold needs. */
export type InMemoryFold<State> = Pick<FoldedProjection<State>, 'reads' | 'counters' | 'init' | 'evolve'>;

/**
 * A projection's in-memory fold of session events, in log (`seq`) order, as its SQL folds them.
 * Events of kinds it reads are read by its `reads`, with the projector's rules. Those of kinds
 * it counts are handed over with no fields; the rest are passed over. It stops at the first
 * event it cannot read, unless `skip` sets it aside, and gives back the fold of the events
 * before: a state is always the fold of a prefix of its log.
 *
 * `from` (a fresh `init()` by default) belongs to the fold from then on: `evolve` may change it.
 *
 * @example
 * ```ts
 * const { state, stoppedAt } = foldEvents(projection, events);
 * if (stoppedAt) console.log(`event ${stoppedAt.index}: ${stoppedAt.problem}`);
 * ```
 */
export function foldEvents<State>(
  projection: InMemoryFold<State>,
  events: Iterable<EventObject>,
  from: State = projection.init(),
  options: FoldEventsOptions = {},
): EventsFold<State> {
  const counted = countedKinds(projection);
  let state = from;
  let index = 0;
  for (const event of events) {
    const kind = event['kind'] as string;
    const read = readEvent(projection.reads, event);
    if (read === undefined) {
      if (counted.has(kind)) state = projection.evolve(state, { kind, fields: NO_FIELDS });
    } else if (read.problem === null) {
      state = projection.evolve(state, { kind, fields: read.fields });
    } else if (!options.skip?.(index)) {
      return { state, consumed: index, stoppedAt: { index, problem: read.problem } };
    }
    index++;
  }
  return { state, consumed: index, stoppedAt: null };
}

const NO_FIELDS = Object.freeze({});

const countedKindsOf = new WeakMap<object, ReadonlySet<string>>();

function countedKinds(projection: InMemoryFold<unknown>): ReadonlySet<string> {
  let kinds = countedKindsOf.get(projection.counters);
  if (kinds === undefined) {
    kinds = new Set(Object.values(projection.counters));
    countedKindsOf.set(projection.counters, kinds);
  }
  return kinds;
}
