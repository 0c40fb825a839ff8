import { afterAll, afterEach, beforeAll, beforeEach, inject } from 'vitest';
import { createCitusScratchDatabase } from './citus-scratch-database.js';
import { createScratchDatabase, type ScratchDatabase } from './scratch-database.js';

export type TestDatabase = Omit<ScratchDatabase, 'drop'>;

/**
 * A database of its own on the test server, for one test file or one test: on the Citus
 * cluster in the citus-suites project (its global setup provides the cluster), so that the
 * same suites prove the same guarantees on a distributed store.
 */
export function createTestDatabase(options: { migrate?: boolean } = {}): Promise<ScratchDatabase> {
  const coordinatorUrl = inject('citusCoordinatorUrl');
  if (coordinatorUrl !== undefined) return createCitusScratchDatabase({ coordinatorUrl, workerUrls: inject('citusWorkerUrls') }, options);
  return createScratchDatabase(inject('postgresAdminUrl'), options);
}

/** True in the citus-suites project, whose test databases are on the Citus cluster. */
export function onCitus(): boolean {
  return inject('citusCoordinatorUrl') !== undefined;
}

/**
 * Gives the calling test file its own migrated database, created before its tests and dropped
 * after them; with `perTest`, each test its own (for tests that need an empty log). Read the
 * fields inside tests or hooks, not at module load.
 */
export function useTestDatabase(options: { migrate?: boolean; perTest?: boolean } = {}): TestDatabase {
  return useScratchDatabase(() => createTestDatabase({ migrate: options.migrate }), options);
}

/**
 * A database that `create` makes before the calling file's tests (with `perTest`, before each
 * test) and that is dropped after them: what {@link useTestDatabase} does on the test server,
 * for any server.
 */
export function useScratchDatabase(create: () => Promise<ScratchDatabase>, options: { perTest?: boolean } = {}): TestDatabase {
  const [before, after] = options.perTest ? [beforeEach, afterEach] : [beforeAll, afterAll];
  const handle = {} as TestDatabase;
  let drop: (() => Promise<void>) | undefined;
  before(async () => {
    const created = await create();
    Object.assign(handle, { url: created.url, name: created.name, db: created.db });
    drop = created.drop;
  });
  after(async () => {
    await drop?.();
    drop = undefined;
  });
  return handle;
}
