import type { Kysely } from 'kysely';
import type { DB } from '../../src/db/schema.js';
import { EventStore } from '../../src/store/event-store.js';
import { type AppendUnit, tagOf } from './append-journal.js';
import { type CliProcessResult, startCli } from './cli-process.js';

/** What the store holds next to what the writers were told (see {@link auditStore}). */
export interface StoreAudit {
  units: number;
  acknowledgedUnits: number;
  acknowledgedEvents: number;
  storedEvents: number;
  /** Acknowledged events not stored, each `unit[i] at session/seq`. */
  lost: string[];
  /** Events (unit, index) stored more than once. */
  doubled: string[];
  /** Units with some but not all of their events stored. */
  halfStored: string[];
  /** Events stored elsewhere than acknowledged, or with other text than written. */
  misplaced: string[];
  /** Sessions whose seqs are not exactly 0..sessions.last_seq. */
  holes: string[];
  /** Stored events of no unit given (a test that writes only tagged events expects none). */
  strays: number;
}

/** Where a tagged event was found. */
interface Found {
  sessionId: string;
  seq: number;
  text: string;
}

/** Descriptions of problems listed, the first few of each kind (a run may have thousands). */
const SHOWN = 10;

/**
 * Reads every session of the store and checks it against the appends the writers made. Every
 * acknowledged event is stored exactly once, at its seq, with its exact text. An unacknowledged
 * unit is stored whole or not at all. No event is stored twice, and no log has a hole.
 *
 * @example
 * ```ts
 * const audit = await auditStore(db, readJournals(files));
 * expect(storeProblems(audit)).toEqual([]);
 * ```
 */
export async function auditStore(db: Kysely<DB>, units: readonly AppendUnit[]): Promise<StoreAudit> {
  const store = new EventStore(db);
  const found = new Map<string, Found[]>();
  const audit: StoreAudit = { units: units.length, acknowledgedUnits: 0, acknowledgedEvents: 0, storedEvents: 0, lost: [], doubled: [], halfStored: [], misplaced: [], holes: [], strays: 0 };
  const known = new Set(units.map((unit) => unit.id));
  const heads = await db.selectFrom('sessions').select(['session_id', 'last_seq']).orderBy('session_id').execute();
  for (const { session_id: sessionId, last_seq: lastSeq } of heads) {
    let expected = 0;
    for await (const { seq, text } of store.readSessionText(sessionId, { pageSize: 10_000 })) {
      if (seq !== expected) audit.holes.push(`${sessionId}: seq ${seq} where ${expected} was due`);
      expected = seq + 1;
      audit.storedEvents += 1;
      const tag = tagOf(text);
      if (tag === undefined || !known.has(tag.unit)) {
        audit.strays += 1;
        continue;
      }
      const key = `${tag.unit}[${tag.i}]`;
      found.set(key, [...(found.get(key) ?? []), { sessionId, seq, text }]);
    }
    if (expected !== lastSeq + 1) audit.holes.push(`${sessionId}: events end at seq ${expected - 1}, sessions.last_seq says ${lastSeq}`);
  }
  for (const unit of units) {
    if (unit.seqs !== undefined) {
      audit.acknowledgedUnits += 1;
      audit.acknowledgedEvents += unit.texts.length;
    }
    let stored = 0;
    unit.texts.forEach((text, i) => {
      const key = `${unit.id}[${i}]`;
      const places = found.get(key) ?? [];
      if (places.length > 1) audit.doubled.push(`${key} at ${places.map((place) => `${place.sessionId}/${place.seq}`).join(', ')}`);
      if (places.length > 0) stored += 1;
      const seq = unit.seqs?.[i];
      if (seq !== undefined && places.length === 0) audit.lost.push(`${key} at ${unit.sessionId}/${seq}`);
      for (const place of places) {
        const wrong = place.sessionId !== unit.sessionId || (seq !== undefined && place.seq !== seq) || place.text !== text;
        if (wrong) audit.misplaced.push(`${key}: written ${unit.sessionId}/${seq ?? '?'} ${text}, stored ${place.sessionId}/${place.seq} ${place.text}`);
      }
    });
    if (stored > 0 && stored < unit.texts.length) audit.halfStored.push(`${unit.id}: ${stored} of ${unit.texts.length} events stored`);
  }
  return audit;
}

/**
 * The problems of an audit as sentences (empty when the store is right), the first few of
 * each kind.
 *
 * @example
 * ```ts
 * storeProblems(audit); // ['lost 2 acknowledged events: w1-7[0] at s3/41, w1-7[1] at s3/42']
 * ```
 */
export function storeProblems(audit: StoreAudit, options: { strays?: boolean } = {}): string[] {
  const problems: string[] = [];
  const list = (what: string, items: readonly string[]) => {
    if (items.length > 0) problems.push(`${what} ${items.length}: ${items.slice(0, SHOWN).join('; ')}`);
  };
  list('lost acknowledged events', audit.lost);
  list('events stored twice', audit.doubled);
  list('units stored in part', audit.halfStored);
  list('events stored elsewhere or otherwise than written', audit.misplaced);
  list('holes in logs', audit.holes);
  if (!(options.strays ?? false) && audit.strays > 0) problems.push(`${audit.strays} stored events of no known append`);
  return problems;
}

/** The CLI's own final check: `project --once`, then `verify --all`. */
export interface CliVerification {
  project: CliProcessResult;
  verify: CliProcessResult;
  /** True when both exited 0 and verify found every session projected and equal to its fold. */
  clean: boolean;
}

/**
 * Runs `os-audit project --once` (after every daemon has stopped, or it waits for their lease)
 * and then `os-audit verify --all` as processes, as an operator would after an incident.
 *
 * @example
 * ```ts
 * const { clean, verify } = await verifyWithCli(databaseUrl);
 * ```
 */
export async function verifyWithCli(databaseUrl: string): Promise<CliVerification> {
  const project = await startCli(['project', '--once', '--lease-ttl', '2000'], { databaseUrl }).result;
  const verify = await startCli(['verify', '--all'], { databaseUrl }).result;
  const clean = project.code === 0 && verify.code === 0 && !/: [1-9]\d* differs? from (its|their) log$/m.test(verify.stdout);
  return { project, verify, clean };
}
