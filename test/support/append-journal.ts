import { closeSync, existsSync, openSync, readFileSync, writeSync } from 'node:fs';
import type { JsonObject } from '../../src/json/json-value.js';
import { sampleEvent } from './sample-event.js';

/**
 * One append of a fault test (a unit: all of it is stored or none), with the exact text of
 * each of its events and, once the store acknowledged it, the seqs it got.
 */
export interface AppendUnit {
  /** Unique in the test, e.g. `w1-17`; every event of the unit carries it as `u`, its index as `i`. */
  id: string;
  sessionId: string;
  texts: string[];
  /** The seqs the store gave, one per text; absent while the append is not acknowledged. */
  seqs?: number[];
  /** When the acknowledgement came (ms since the epoch). */
  ackedAt?: number;
}

/**
 * Event `i` of unit `unit`: a plausible event (kinds the snapshot reads and others) tagged with
 * `u` and `i`, so that a stored event tells which append it came from and where in it.
 *
 * @example
 * ```ts
 * JSON.stringify(taggedEvent('w1-0', 3)); // '{"kind":"tool_gated",...,"u":"w1-0","i":3}'
 * ```
 */
export function taggedEvent(unit: string, i: number): JsonObject {
  return { ...sampleEvent(i), u: unit, i };
}

/** The `u` and `i` tags of a stored event's text, or undefined for an event no fault test wrote. */
export function tagOf(text: string): { unit: string; i: number } | undefined {
  const event = JSON.parse(text) as { u?: unknown; i?: unknown };
  return typeof event.u === 'string' && typeof event.i === 'number' ? { unit: event.u, i: event.i } : undefined;
}

/**
 * A writer's journal: a JSONL file where each append is written before it is sent (its texts)
 * and again once acknowledged (its seqs). Each line is written with one `write(2)`, so a writer
 * killed with SIGKILL leaves every acknowledgement it had received (a last line may be cut).
 *
 * @example
 * ```ts
 * const journal = new AppendJournal('/tmp/w1.jsonl');
 * journal.intent({ id: 'w1-0', sessionId: 's', texts });
 * journal.ack('w1-0', await store.append('s', events));
 * ```
 */
export class AppendJournal {
  private readonly fd: number;

  constructor(readonly file: string) {
    this.fd = openSync(file, 'a');
  }

  intent(unit: Omit<AppendUnit, 'seqs' | 'ackedAt'>): void {
    this.line({ unit: unit.id, session: unit.sessionId, texts: unit.texts });
  }

  ack(unit: string, seqs: readonly number[]): void {
    this.line({ ack: unit, seqs, at: Date.now() });
  }

  close(): void {
    closeSync(this.fd);
  }

  private line(record: object): void {
    writeSync(this.fd, `${JSON.stringify(record)}\n`);
  }
}

/**
 * The units of journal files, acknowledged or not; a line cut by a kill is ignored, and so is
 * a file that is missing (a writer killed before it opened its journal appended nothing).
 */
export function readJournals(files: readonly string[]): AppendUnit[] {
  const units = new Map<string, AppendUnit>();
  for (const file of files.filter((name) => existsSync(name))) {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      let record: { unit?: string; session?: string; texts?: string[]; ack?: string; seqs?: number[]; at?: number };
      try {
        record = JSON.parse(line);
      } catch {
        continue; // empty, or cut by the kill
      }
      if (record.unit !== undefined) units.set(record.unit, { id: record.unit, sessionId: record.session!, texts: record.texts! });
      else if (record.ack !== undefined) Object.assign(units.get(record.ack)!, { seqs: record.seqs, ackedAt: record.at });
    }
  }
  return [...units.values()];
}
