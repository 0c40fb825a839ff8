import { readFileSync } from 'node:fs';
import type { RouteResponse } from '../observability/observability-server.js';

/** The console's files under `/assets/`: plain CSS and an ES module, shipped as they are (copied to dist by `npm run build`). */
const ASSETS = {
  'console.css': 'text/css; charset=utf-8',
  'console.js': 'text/javascript; charset=utf-8',
} as const;

/**
 * Reads the console's assets once, from `assets/` next to this module (in src/ or in dist/),
 * and answers `/assets/<name>` with them.
 *
 * @example
 * ```ts
 * const assets = loadConsoleAssets();
 * assets('console.css'); // { status: 200, contentType: 'text/css; charset=utf-8', body: '…' }
 * ```
 */
export function loadConsoleAssets(): (name: string) => RouteResponse | undefined {
  const files = new Map(
    Object.entries(ASSETS).map(([name, contentType]) => [name, { status: 200, contentType, body: readFileSync(new URL(`./assets/${name}`, import.meta.url), 'utf8') }]),
  );
  return (name) => files.get(name);
}
