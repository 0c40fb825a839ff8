import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/** Debian's `chromium` package (.ci/run installs it). */
export const CHROMIUM_PATH = '/usr/bin/chromium';

const inCi = process.env.CI === 'true';

/** Whether the browser tests run: with Chromium installed, and always under CI=true (where a missing Chromium fails them). */
export const browserTestsRun = existsSync(CHROMIUM_PATH) || inCi;
if (!browserTestsRun) console.warn(`test/console browser tests: skipped, no Chromium at ${CHROMIUM_PATH} (apt-get install chromium; .ci/run installs it)`);

/**
 * Starts the system Chromium headless, without network side trips (updates, sync, QUIC).
 *
 * @example
 * ```ts
 * const browser = await launchChromium();
 * const page = await browser.newPage();
 * await page.goto(server.url);
 * await browser.close();
 * ```
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`no Chromium at ${CHROMIUM_PATH}: apt-get install chromium (.ci/run installs it)`);
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
