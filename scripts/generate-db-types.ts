/**
 * `npm run db:types`: migrates a scratch database (on $DATABASE_URL's server, else an embedded
 * PostgreSQL) and regenerates src/db/schema.ts from it with kysely-codegen.
 */
import { writeFile } from 'node:fs/promises';
import { startPostgres } from '../test/support/postgres-server.js';
import { createScratchDatabase } from '../test/support/scratch-database.js';
import { generateDbTypes, SCHEMA_TYPES_FILE } from './db-types.js';

const server = await startPostgres();
try {
  const scratch = await createScratchDatabase(server.adminUrl);
  try {
    await writeFile(SCHEMA_TYPES_FILE, await generateDbTypes(scratch.url));
    console.log(`wrote ${SCHEMA_TYPES_FILE}`);
  } finally {
    await scratch.drop();
  }
} finally {
  await server.stop();
}
