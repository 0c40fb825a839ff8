import { AssertionError } from 'node:assert';
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { encodeEventText } from '../events/encode-event.js';
import { diffJson } from '../json/diff-json.js';
import type { JsonObject, JsonValue } from '../json/json-value.js';
import { parseJson } from '../json/parse-json.js';
import { stringifyJson } from '../json/stringify-json.js';
import { migrateToLatest } from '../migrate-to-latest.js';
import { foldEvents } from '../projector/fold-events.js';
import { hasInMemoryFold, type Projection } from '../projector/projection.js';
import { Projector } from '../projector/projector.js';
import { readStoredSnapshots } from '../projector/stored-snapshot.js';
import { verifyProjection } from '../projector/verify-projection.js';
import { EventStore } from '../store/event-store.js';

/** Events by session name: each a JSON object, or its JSON text exactly as a runtime wrote it. */
export type SessionEvents = Readonly<Record<string, readonly (JsonObject | string)[]>>;

/** What a session's snapshot should be after the events: its JSON, and where it stops if it does. */
export type ExpectedSnapshots = Readonly<Record<string, JsonValue>>;

export interface ThenOptions {
  /** Sessions the projection should stop, by name: the seq of the event it stops at. Any other stop fails. */
  stopped?: Readonly<Record<string, number>>;
}

/**
 * A projection tested as given events, when folded, then these snapshots, over a real database.
 * Each `then` appends the events of `given` and folds them with the projector (the SQL batch),
 * then those of each `when` and folds again (so a session is continued across batches). It then
 * checks the snapshot view against the expected JSON, the in-memory fold (if the projection has
 * one) against the same JSON, and `verifyProjection` over the sessions. A failure is an
 * `AssertionError` saying which of them differs, so it works under any test runner.
 *
 * Session names are made unique per run (`<run id>/<name>` in the log), so that specs can share
 * one database: a projection that puts the session id into its snapshot sees that name.
 *
 * @example
 * ```ts
 * const spec = ProjectionSpec.for(kindCountsProjection, { db }); // migrates db with the projection
 * await spec
 *   .given({ s: [{ kind: 'suspended', turn: 1, reason: 'ask_user', pending_calls: [] }] })
 *   .when({ s: [{ kind: 'resumed', turn: 2 }] })
 *   .then({ s: { suspended: 1, resumed: 1 } });
 * ```
 */
export class ProjectionSpec {
  private migrated: Promise<unknown> | undefined;

  private constructor(
    readonly projection: Projection,
    private readonly db: Kysely<DB>,
  ) {}

  /** A spec of `projection` on `db`: an os-audit database, or an empty one that the first run migrates. */
  static for(projection: Projection, options: { db: Kysely<any> }): ProjectionSpec {
    return new ProjectionSpec(projection, options.db);
  }

  /** The events in the log before the projection folds. */
  given(events: SessionEvents): ProjectionSpecRun {
    return new ProjectionSpecRun(this, [events]);
  }

  /** @internal Runs the batches and checks the outcome (see {@link ProjectionSpecRun.then}). */
  async run(batches: readonly SessionEvents[], expected: ExpectedSnapshots, options: ThenOptions): Promise<void> {
    this.migrated ??= migrateToLatest(this.db, [this.projection]);
    await this.migrated;
    const runId = randomUUID();
    const idOf = (name: string) => `${runId}/${name}`;
    const store = new EventStore(this.db);
    const projector = new Projector(this.db, this.projection);
    const logs = new Map<string, JsonObject[]>();
    for (const batch of batches) {
      for (const [name, events] of Object.entries(batch)) {
        const texts = events.map((event) => (typeof event === 'string' ? event : stringifyJson(event)));
        await store.appendEncoded(idOf(name), texts.map((text) => encodeEventText(text, { sessionId: name })));
        logs.set(name, [...(logs.get(name) ?? []), ...texts.map((text) => parseJson(text) as JsonObject)]);
      }
      await projector.catchUp();
    }
    const names = [...new Set([...logs.keys(), ...Object.keys(expected)])];
    const stored = await readStoredSnapshots(this.db, this.projection, names.map(idOf));
    const problems: string[] = [];
    for (const name of names) {
      const snapshot = stored.get(idOf(name));
      const stop = snapshot?.stopped ?? null;
      const expectedStop = options.stopped?.[name];
      if (stop !== null && stop.seq !== expectedStop) problems.push(`${name}: the projector stopped it at seq ${stop.seq} (${stop.problem})`);
      if (stop === null && expectedStop !== undefined) problems.push(`${name}: expected a stop at seq ${expectedStop}, the projector folded it all`);
      if (!(name in expected)) continue;
      if (snapshot === undefined) {
        problems.push(`${name}: no snapshot in ${this.projection.snapshotView}`);
        continue;
      }
      problems.push(...differences(expected[name]!, snapshot.json, 'sql').map((line) => `${name}: ${line}`));
      if (hasInMemoryFold(this.projection)) {
        const fold = foldEvents(this.projection, logs.get(name) ?? []);
        problems.push(...differences(expected[name]!, this.projection.toJson(fold.state), 'fold').map((line) => `${name}: ${line}`));
        if ((fold.stoppedAt?.index ?? undefined) !== expectedStop) problems.push(`${name}: the in-memory fold stops at ${fold.stoppedAt === null ? 'no event' : `seq ${fold.stoppedAt.index}`}`);
      }
    }
    const report = await verifyProjection(this.db, this.projection, { sessions: names.map(idOf) });
    for (const mismatch of report.mismatches) problems.push(`verify: ${mismatch.sessionId.slice(runId.length + 1)}: ${mismatch.differences.join('; ')}`);
    if (problems.length > 0) {
      throw new AssertionError({ message: `projection ${this.projection.name}: ${problems.length} difference(s)\n${problems.join('\n')}` });
    }
  }
}

/** A spec with its events: more batches with `when`, the outcome checked by `then`. */
export class ProjectionSpecRun {
  constructor(
    private readonly spec: ProjectionSpec,
    private readonly batches: readonly SessionEvents[],
  ) {}

  /** More events, appended and folded in a later batch. */
  when(events: SessionEvents): ProjectionSpecRun {
    return new ProjectionSpecRun(this.spec, [...this.batches, events]);
  }

  /** Runs the batches and checks each expected session's snapshot (see {@link ProjectionSpec}). */
  then(expected: ExpectedSnapshots, options: ThenOptions = {}): Promise<void> {
    return this.spec.run(this.batches, expected, options);
  }
}

/** How `actual` differs from `expected`: by value, else by key order (a snapshot's keys are in order). */
function differences(expected: JsonValue, actual: JsonValue, name: string): string[] {
  const byValue = diffJson(expected, actual, ['expected', name]);
  if (byValue.length > 0) return byValue;
  const [expectedText, actualText] = [stringifyJson(expected), stringifyJson(actual)];
  return expectedText === actualText ? [] : [`key order: expected ${expectedText}, ${name} ${actualText}`];
}
