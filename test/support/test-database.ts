import { afterAll, afterEach, beforeAll, beforeEach, inject } from 'vitest';
import { createCitusScratchDatabase } from './citus-scratch-database.js';
import { createScratchDatabase, type ScratchDatabase } from './scratch-database.js';

export type TestDatabase = Omit<ScratchDatabase, 'drop'>;

/**
 * True in the citus-suites project, where {@link createTestDatabase} makes the databases on a
 * Citus cluster: there the projector reads each session by seq, and no transaction id or
 * open transaction holds committed events back (docs/scale-out.md).
 */
export const onCitus = inject('citusCoordinatorUrl') !== undefined;

/**
 * A database of its own on the test server, for one test file or one test. In the
 * citus-suites project it is on the Citus cluster its global setup provides, so that the same
 * suites prove the same guarantees on a distributed store.
 */
export function createTestDatabase(options: { migrate?: boolean } = {}): Promise<ScratchDatabase> {
  const citusUnavailable = inject('citusUnavailable');
  if (citusUnavailable !== undefined) throw new Error(citusUnavailable);
  const coordinatorUrl = inject('citusCoordinatorUrl');
  if (coordinatorUrl !== undefined) return createCitusScratchDatabase({ coordinatorUrl, workerUrls: inject('citusWorkerUrls') }, options);
  return createScratchDatabase(inject('postgresAdminUrl'), options);
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
