/**
 * `npm run screenshots`: imports the samples into a scratch database (on $DATABASE_URL's
 * server, else an embedded PostgreSQL) and runs the projector daemon, which serves the web
 * console. Then it writes a screenshot of each page to docs/console/ with the system Chromium
 * (/usr/bin/chromium).
 */
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { LiveFigures } from '../src/console/live-figures-query.js';
import { launchChromium } from '../test/support/chromium.js';
import { pollUntil, startDaemon } from '../test/support/daemon-process.js';
import { startPostgres } from '../test/support/postgres-server.js';
import { runCliInProcess } from '../test/support/run-cli-in-process.js';
import { createScratchDatabase } from '../test/support/scratch-database.js';

const outDir = fileURLToPath(new URL('../docs/console/', import.meta.url));
const samples = fileURLToPath(new URL('../samples', import.meta.url));

/** The pages shown in docs/console.md: file name, path (a #fragment scrolls there) and window height. */
const SHOTS = [
  { file: 'projections.png', path: '/', height: 720 },
  { file: 'sessions.png', path: '/sessions', height: 720 },
  { file: 'session.png', path: '/sessions/sample-000003?at=20', height: 900 },
  { file: 'session-events.png', path: '/sessions/sample-000003?from=8#timeline', height: 720 },
] as const;

/** Long enough for the page's script to read the live figures twice (it computes the rates from two). */
const LIVE_FIGURES_MS = 2500;

const server = await startPostgres();
try {
  const scratch = await createScratchDatabase(server.adminUrl);
  try {
    const imported = await runCliInProcess(['import', samples], { env: { DATABASE_URL: scratch.url } });
    if (imported.code !== 0) throw new Error(`os-audit import failed: ${imported.stderr}`);
    const daemon = startDaemon(scratch.url, { owner: 'os-audit-daemon' });
    const consoleUrl = await daemon.metricsUrl();
    await pollUntil('the daemon to fold the samples', async () => {
      const live = (await (await fetch(`${consoleUrl}/api/live`)).json()) as LiveFigures;
      return live.projections.every((projection) => projection.eventsApplied > 0 && projection.lagEvents === 0);
    }, { intervalMs: 200 });
    const browser = await launchChromium();
    try {
      mkdirSync(outDir, { recursive: true });
      for (const shot of SHOTS) {
        const page = await browser.newPage({ viewport: { width: 1280, height: shot.height } });
        await page.goto(`${consoleUrl}${shot.path}`);
        await page.waitForTimeout(LIVE_FIGURES_MS);
        await page.screenshot({ path: `${outDir}${shot.file}` });
        await page.close();
        console.log(`wrote docs/console/${shot.file}`);
      }
    } finally {
      await browser.close();
      await daemon.stop('SIGTERM');
    }
  } finally {
    await scratch.drop();
  }
} finally {
  await server.stop();
}
