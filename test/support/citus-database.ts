import { inject } from 'vitest';
import type { CitusNodes } from './citus-cluster.js';
import { createCitusScratchDatabase } from './citus-scratch-database.js';
import type { ScratchDatabase } from './scratch-database.js';
import { type TestDatabase, useScratchDatabase } from './test-database.js';

/**
 * Whether the citus project's tests run: with the shared cluster, and always under CI=true
 * (where its absence fails them: .ci/run installs Citus). Their `describe.runIf`.
 */
export const citusTestsRun = inject('citusUnavailable') === undefined || process.env.CI === 'true';

/** The shared cluster of the citus project (its global setup started it); throws why there is none. */
export function citusTestCluster(): CitusNodes {
  const unavailable = inject('citusUnavailable');
  if (unavailable !== undefined) throw new Error(unavailable);
  return { coordinatorUrl: inject('citusCoordinatorUrl'), workerUrls: inject('citusWorkerUrls') };
}

/** A database of its own on the shared cluster, for one test file or one test. */
export function createCitusTestDatabase(options: { migrate?: boolean } = {}): Promise<ScratchDatabase> {
  return createCitusScratchDatabase(citusTestCluster(), options);
}

/**
 * As `useTestDatabase`, on the shared Citus cluster: the calling test file's own database
 * (with `perTest`, each test's), Citus created and the nodes registered in it, migrated unless
 * `migrate: false`. Read the fields inside tests or hooks, not at module load.
 */
export function useCitusDatabase(options: { migrate?: boolean; perTest?: boolean } = {}): TestDatabase {
  return useScratchDatabase(() => createCitusTestDatabase({ migrate: options.migrate }), options);
}
