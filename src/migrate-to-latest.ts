import type { Kysely } from 'kysely';
import { builtInProjections } from '../projections/index.js';
import { MigrationError } from './db/migrate.js';
import { migrateProjections } from './projector/migrate-projections.js';
import type { Projection } from './projector/projection.js';
import { backfillEventChain, type ChainBackfillProgress } from './store/backfill-event-chain.js';

export interface MigrateOptions {
  /** Called after each batch of the hash chain's backfill over events stored before it (see `backfillEventChain`). */
  onChainProgress?: (progress: ChainBackfillProgress) => void;
}

/**
 * Brings the schema to the latest migration: the engine's, then each projection's own (named
 * `PROJECTION/KEY`), and registers the projections; a second run applies nothing. Events stored
 * before the hash chain are then chained.
 *
 * @example
 * ```ts
 * const applied = await migrateToLatest(db); // with the projections os-audit ships
 * console.log(applied.length ? `applied ${applied.join(', ')}` : 'already up to date');
 * await migrateToLatest(db, [...builtInProjections, toolCallsProjection]);
 * ```
 * @returns the names of the migrations this call applied
 */
export async function migrateToLatest(
  db: Kysely<any>,
  projections: readonly Projection[] = builtInProjections,
  options: MigrateOptions = {},
): Promise<string[]> {
  const applied = await migrateProjections(db, projections);
  try {
    await backfillEventChain(db, { onProgress: options.onChainProgress });
  } catch (cause) {
    const message = cause instanceof Error ? cause.message : String(cause);
    throw new MigrationError(`chaining the events stored before 0017-event-chain failed (run migrate again to go on): ${message}`, [], { cause });
  }
  return applied;
}
