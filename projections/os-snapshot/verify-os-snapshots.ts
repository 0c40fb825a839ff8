import type { Kysely } from 'kysely';
import type { DB } from '../../src/db/schema.js';
import { type VerifyReport, type VerifySelection, verifyProjection } from '../../src/projector/verify-projection.js';
import { osSnapshotProjection } from './os-snapshot-projection.js';

/**
 * Proves the OS snapshot's SQL tables right (`verifyProjection` for the snapshot of the spec).
 *
 * @example
 * ```ts
 * const report = await verifyOsSnapshots(db, { all: true });
 * if (report.mismatches.length > 0 || report.corrupt.length > 0) process.exitCode = 1;
 * ```
 */
export function verifyOsSnapshots(db: Kysely<DB>, selection: VerifySelection, onProgress?: (checked: number, total: number) => void): Promise<VerifyReport> {
  return verifyProjection(db, osSnapshotProjection, selection, onProgress);
}
