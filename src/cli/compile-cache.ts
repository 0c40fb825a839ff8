import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire, wrap } from 'node:module';
import path from 'node:path';
import { Script } from 'node:vm';
import { DYNAMIC_IMPORT_HOOK } from '../runtime/dynamic-import.js';

/**
 * Runs the CommonJS `bundle` (the CLI, built by scripts/bundle-cli.ts) with V8's code cache of it
 * for `command`: parsing and compiling it at every start took about a third of a short command.
 * The cache (`BUNDLE.COMMAND.cache`) is written when the command first runs, and again when V8
 * refuses it. A folder that is not writable goes without.
 * Why: docs/design/cli-start-time.md
 *
 * @example
 * ```ts
 * runWithCompileCache(fileURLToPath(new URL('./os-audit-bundle.cjs', import.meta.url)), process.argv[2] ?? '');
 * ```
 */
export function runWithCompileCache(bundle: string, command: string): void {
  // Commands are words; anything else (a flag, a typo) shares one cache.
  const cacheFile = `${bundle}.${/^[a-z][a-z-]{0,30}$/.test(command) ? command : 'other'}.cache`;
  const cachedData = readOptional(cacheFile);
  // The bundle keeps main.ts's #! line, which only an entry file may have: blanked, lines unmoved.
  const source = readFileSync(bundle, 'utf8').replace(/^#!.*/, '');
  const script = new Script(wrap(source), { filename: bundle, ...(cachedData ? { cachedData } : {}) });
  if (cachedData === undefined || script.cachedDataRejected === true) {
    // At exit, so that the cache holds every function the command compiled.
    process.once('exit', () => writeCache(script, cacheFile));
  }
  // The script's own import() is lost with the cache in Node 20: it imports through ours.
  (globalThis as Record<symbol, unknown>)[DYNAMIC_IMPORT_HOOK] = (url: string) => import(url);
  const module = { exports: {} };
  const run = script.runInThisContext() as (exports: object, require: NodeJS.Require, module: object, filename: string, dirname: string) => void;
  run.call(module.exports, module.exports, createRequire(bundle), module, bundle, path.dirname(bundle));
}

function writeCache(script: Script, file: string): void {
  try {
    // Renamed into place whole: another command may read it meanwhile.
    writeFileSync(`${file}.${process.pid}`, script.createCachedData());
    renameSync(`${file}.${process.pid}`, file);
  } catch {
    // A read-only install: every start compiles, as without the cache.
  }
}

function readOptional(file: string): Buffer | undefined {
  try {
    return readFileSync(file);
  } catch {
    return undefined;
  }
}
