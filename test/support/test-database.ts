import { afterAll, beforeAll, inject } from 'vitest';
import { createScratchDatabase, type ScratchDatabase } from './scratch-database.js';

export type TestDatabase = Omit<ScratchDatabase, 'drop'>;

/** A database of its own on the test server, for one test file or one test. */
export function createTestDatabase(options: { migrate?: boolean } = {}): Promise<ScratchDatabase> {
  return createScratchDatabase(inject('postgresAdminUrl'), options);
}

/**
 * Gives the calling test file its own migrated database, created before its tests and dropped
 * after them. Read the fields inside tests or hooks, not at module load.
 */
export function useTestDatabase(options: { migrate?: boolean } = {}): TestDatabase {
  const handle = {} as TestDatabase;
  let drop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const created = await createTestDatabase(options);
    Object.assign(handle, { url: created.url, name: created.name, db: created.db });
    drop = created.drop;
  });
  afterAll(async () => {
    await drop?.();
  });
  return handle;
}
