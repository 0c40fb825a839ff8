import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire, wrap } from 'node:module';
import path from 'node:path';
import { Script } from 'node:vm';
import { DYNAMIC_IMPORT_HOOK } from '../runtime/dynamic-import.js';

/** What a bundle's code cache holds: V8's compiled code, and the commands it was made after. */
interface CacheFiles {
  data: string;
  commands: string;
}

/**
 * Runs the CommonJS `bundle` (the CLI, built by scripts/bundle-cli.ts) with V8's code cache of it
 * (`BUNDLE.cache`), so that Node deserializes compiled code instead of parsing and compiling half
 * a megabyte of JavaScript at every start (about a third of a short command's time; Node 20 has
 * no compile cache of its own). The cache holds the functions compiled by the runs that wrote it:
 * written again after a command it has not seen (its first argument), and when V8 refuses it (a
 * new bundle or another Node). A folder that is not writable just goes without.
 *
 * @example
 * ```ts
 * runWithCompileCache(fileURLToPath(new URL('./os-audit-bundle.cjs', import.meta.url)), process.argv[2] ?? '');
 * ```
 */
export function runWithCompileCache(bundle: string, command: string): void {
  const files: CacheFiles = { data: `${bundle}.cache`, commands: `${bundle}.cache-commands.json` };
  const cachedData = readOptional(files.data);
  const cachedCommands = cachedData === undefined ? [] : readCommands(files.commands);
  // The bundle keeps main.ts's #! line, which only an entry file may have: blanked, lines unmoved.
  const source = readFileSync(bundle, 'utf8').replace(/^#!.*/, '');
  const script = new Script(wrap(source), {
    filename: bundle,
    ...(cachedData ? { cachedData } : {}),
  });
  const stale = cachedData === undefined || script.cachedDataRejected === true;
  if (stale || !cachedCommands.includes(command)) {
    // At exit, so that the cache holds every function this command compiled.
    process.once('exit', () => writeCache(script, files, stale ? [command] : [...cachedCommands, command]));
  }
  // The script's own import() is lost with the cache in Node 20: it imports through ours.
  (globalThis as Record<symbol, unknown>)[DYNAMIC_IMPORT_HOOK] = (url: string) => import(url);
  const module = { exports: {} };
  const run = script.runInThisContext() as (exports: object, require: NodeJS.Require, module: object, filename: string, dirname: string) => void;
  run.call(module.exports, module.exports, createRequire(bundle), module, bundle, path.dirname(bundle));
}

function writeCache(script: Script, files: CacheFiles, commands: readonly string[]): void {
  try {
    // Renamed into place whole: another command may read it meanwhile.
    const draft = `${files.data}.${process.pid}`;
    writeFileSync(draft, script.createCachedData());
    renameSync(draft, files.data);
    writeFileSync(`${files.commands}.${process.pid}`, JSON.stringify(commands));
    renameSync(`${files.commands}.${process.pid}`, files.commands);
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

function readCommands(file: string): string[] {
  try {
    const commands = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    return Array.isArray(commands) ? commands.filter((command): command is string => typeof command === 'string') : [];
  } catch {
    return [];
  }
}
