import { readFileSync } from 'node:fs';
import { isJsonObject, type JsonObject, type JsonValue } from '../../src/json/json-value.js';
import { parseJson } from '../../src/json/parse-json.js';

/**
 * The runtime's golden session fixtures at v0.2.60 (`tests/fixtures/session` of
 * `deepstrike-node-v0.2.60.tar.gz`, copied as they are into `test/fixtures/v0.2.60/`): each
 * case's name, its events file and its snapshot file.
 */
export const V0260_GOLDEN_CASES = [
  ['spawn lifecycle', 'events_spawn_lifecycle.json', 'os_snapshot_spawn_lifecycle.json'],
  ['ask user', 'events_ask_user.json', 'os_snapshot_ask_user.json'],
] as const;

/** The snapshot's four memory counters, which the fixtures leave out (the Rust struct reads them with `serde(default)`). */
export const MEMORY_COUNTERS = ['memory_written_count', 'memory_queried_count', 'memory_validation_failed_count', 'memory_retrieval_result_count'];

/**
 * A fixture file of `test/fixtures/v0.2.60/`, parsed exactly.
 *
 * @example
 * ```ts
 * const events = v0260Fixture('events_ask_user.json') as JsonObject[];
 * ```
 */
export function v0260Fixture(name: string): JsonValue {
  return parseJson(readFileSync(new URL(`../fixtures/v0.2.60/${name}`, import.meta.url), 'utf8'));
}

/**
 * A fixture's snapshot as the Rust fold reads it: its missing memory counters 0, after the
 * others (the struct's field order), so that it is the fold's JSON key for key.
 *
 * @example
 * ```ts
 * stringifyJson(asRustReadsIt(v0260Fixture('os_snapshot_ask_user.json')));
 * ```
 */
export function asRustReadsIt(snapshot: JsonValue): JsonObject {
  if (!isJsonObject(snapshot)) throw new Error('a snapshot fixture is a JSON object');
  return { ...snapshot, ...Object.fromEntries(MEMORY_COUNTERS.map((key) => [key, snapshot[key] ?? 0])) };
}
