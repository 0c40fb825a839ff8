import type { TestProject } from 'vitest/node';
import { CITUS_MISSING, citusInstalled, startCitusCluster } from './citus-cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The shared cluster's coordinator (a superuser URL); provided only when a cluster runs. */
    citusCoordinatorUrl: string;
    /** Its workers' URLs, likewise. */
    citusWorkerUrls: string[];
    /** Why no cluster runs (Citus is not installed); absent when one does. */
    citusUnavailable?: string;
  }
}

/**
 * One Citus cluster (a coordinator, two workers) for the citus project's whole run; each test
 * file makes its own database on it. Without Citus it starts none and says why: the tests are
 * skipped then, except under CI=true, where they fail.
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  if (!citusInstalled()) {
    console.warn(process.env.CI === 'true' ? `test/citus: ${CITUS_MISSING}; under CI=true its tests fail` : `test/citus: skipped, ${CITUS_MISSING}`);
    project.provide('citusUnavailable', CITUS_MISSING);
    return undefined;
  }
  const cluster = await startCitusCluster({ workers: 2 });
  project.provide('citusCoordinatorUrl', cluster.coordinatorUrl);
  project.provide('citusWorkerUrls', cluster.workerUrls);
  return () => cluster.stop();
}
