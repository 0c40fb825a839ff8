/**
 * Everything a projection needs, and nothing of the engine's insides: defining one, the fields
 * it reads, its batch SQL, its in-memory fold, its snapshot view, and the JSON types.
 * Re-exported by the package's entry. Code under `projections/` imports only this module,
 * `kysely` and its own folder (`test/conventions/layers.spec.ts`).
 *
 * @example
 * ```ts
 * import { defineEventReads, defineProjection, field, sql } from 'os-audit';
 * ```
 *
 * @module
 */
export {
  defineProjection,
  type EventBatchSql,
  type FoldedProjection,
  hasInMemoryFold,
  type Projection,
  type ProjectionEvent,
  type ProjectionFold,
} from './projector/projection.js';
export { defineEventReads, type EventObject, type EventReads, field, FieldRead, type FieldType, type FieldValue, readEvent } from './projector/event-reads.js';
export { type EventsFold, foldEvents, type FoldEventsOptions, type UnreadableEvent } from './projector/fold-events.js';
export { plannedOnceSnapshotView, type SnapshotViewParts } from './projector/planned-once-snapshot-view.js';
export { isJsonObject, type JsonArray, JsonFloat, type JsonObject, type JsonValue } from './json/json-value.js';
// A projection's SQL is written with kysely's `sql` tag: this one, so that a plug-in shares os-audit's kysely.
export { sql } from 'kysely';
