import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { InterleavedCorpus } from '../../bench/corpus.js';
import type { JsonValue } from '../../src/json/json-value.js';
import type { EventObject } from '../../src/projector/event-reads.js';
import { foldEvents } from '../../src/projector/fold-events.js';
import type { FoldedProjection } from '../../src/projector/projection.js';

/** What {@link writeCorpusStream} wrote: the sessions, and each projection's in-memory fold of each. */
export interface CorpusStream {
  events: number;
  sessions: number;
  /** Projection name → session id → the snapshot JSON of the fold of its whole log (up to where the fold stops). */
  folds: Map<string, Map<string, JsonValue>>;
}

/**
 * Writes the benchmark's corpus (sessions of every kind, interleaved) of `events` events to
 * `file` as one import stream (`{"session_id":…,"seq":N,"event":{…}}` per line). It folds each
 * session in memory with each of `projections` as it goes: the reference the SQL snapshots must
 * equal.
 */
export async function writeCorpusStream(file: string, options: { seed: string; prefix: string; events: number; projections: readonly FoldedProjection[] }): Promise<CorpusStream> {
  const corpus = new InterleavedCorpus({ seed: options.seed, prefix: options.prefix, events: options.events });
  const states = options.projections.map(() => new Map<string, { state: unknown; stopped: boolean }>());
  const out = createWriteStream(file);
  let events = 0;
  for (const row of corpus.rows()) {
    events += 1;
    if (!out.write(`{"session_id":${JSON.stringify(row.sessionId)},"seq":${row.seq},"event":${row.json}}\n`)) await once(out, 'drain');
    options.projections.forEach((projection, index) => {
      const sessions = states[index]!;
      const folded = sessions.get(row.sessionId) ?? { state: projection.init(), stopped: false };
      if (!folded.stopped) {
        const fold = foldEvents(projection, [row.event as EventObject], folded.state);
        folded.state = fold.state;
        folded.stopped = fold.stoppedAt !== null;
      }
      sessions.set(row.sessionId, folded);
    });
  }
  out.end();
  await once(out, 'close');
  const folds = new Map(
    options.projections.map((projection, index) => [
      projection.name,
      new Map([...states[index]!].map(([sessionId, { state }]) => [sessionId, projection.toJson(state)])),
    ]),
  );
  return { events, sessions: states[0]?.size ?? 0, folds };
}
