import { configDefaults, defineConfig } from 'vitest/config';
import { CITUS_MISSING, citusInstalled } from './test/support/citus-cluster.js';

// The single-server suites on a cluster need Citus: without it they are left out, except under CI=true, where they fail.
const citusSuites = citusInstalled() || process.env.CI === 'true';
if (!citusSuites) console.warn(`citus-suites: not run, ${CITUS_MISSING}`);

export default defineConfig({
  test: {
    // Each test as it ends, and what still runs after a quiet minute: vitest's default prints a file only when it ends.
    reporters: ['./test/support/progress-reporter.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'default',
          include: ['test/**/*.spec.ts'],
          exclude: [...configDefaults.exclude, 'test/citus/**'],
          globalSetup: ['test/support/global-setup.ts'],
        },
      },
      {
        // Against a Citus cluster of its own (test/support/citus-global-setup.ts), whatever DATABASE_URL says.
        extends: true,
        test: {
          name: 'citus',
          include: ['test/citus/**/*.spec.ts'],
          globalSetup: ['test/support/citus-global-setup.ts'],
        },
      },
      ...(citusSuites
        ? [
            {
              // The single-server suites of the store, import, projector and session log, each file on a database of the cluster.
              extends: true as const,
              test: {
                name: 'citus-suites',
                include: ['test/{store,import,projector,session-log}/**/*.int.spec.ts'],
                // Each batch on the cluster is a dozen distributed statements, not one, and each event's
                // hash is chained on its shard by dynamic SQL: the property tests take longer.
                testTimeout: 600_000,
                globalSetup: ['test/support/citus-global-setup.ts'],
              },
            },
          ]
        : []),
    ],
  },
});
