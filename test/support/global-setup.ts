import type { TestProject } from 'vitest/node';
import { startPostgres } from './postgres-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresAdminUrl: string;
    postgresSource: string;
  }
}

/** One PostgreSQL server for the whole run; each test file makes its own database on it. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startPostgres();
  project.provide('postgresAdminUrl', server.adminUrl);
  project.provide('postgresSource', server.source);
  return () => server.stop();
}
