import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Command } from 'commander';
import type { Projection } from '../projector/projection.js';
import { dynamicImport } from '../runtime/dynamic-import.js';
import { type CliIo, CliError } from './cli-context.js';

/** The environment variable naming the module of projections, as `--projections` does. */
export const PROJECTIONS_ENV = 'OS_AUDIT_PROJECTIONS';

/**
 * The projections a command works with: those of the module `--projections` (or
 * `OS_AUDIT_PROJECTIONS`) names, else the ones os-audit ships. The module's default export (or
 * its export `projections`) is an array of projections; each is checked (`defineProjection`),
 * and their names must differ. A module that cannot be used is a usage error (exit code 2)
 * naming it.
 *
 * @example
 * ```ts
 * const projections = await commandProjections(command, io); // in a command's action
 * ```
 */
export async function commandProjections(command: Command, io: CliIo): Promise<readonly Projection[]> {
  const module = (command.optsWithGlobals().projections as string | undefined) ?? (io.env[PROJECTIONS_ENV] || undefined);
  // Loaded on demand, as commands are: the projections pull in their SQL and folds.
  return module === undefined ? (await import('../../projections/index.js')).builtInProjections : loadProjections(module);
}

async function loadProjections(module: string): Promise<readonly Projection[]> {
  const file = path.resolve(module);
  let exports: { default?: unknown; projections?: unknown };
  try {
    exports = (await dynamicImport(pathToFileURL(file).href)) as typeof exports;
  } catch (error) {
    throw new CliError(`cannot load the projections module ${file}: ${(error as Error).message}`, 2);
  }
  const list = exports.default ?? exports.projections;
  if (!Array.isArray(list) || list.length === 0) {
    throw new CliError(`the projections module ${file} must export a non-empty array of projections (as its default export, or as "projections")`, 2);
  }
  const { defineProjection } = await import('../projector/projection.js');
  const names = new Set<string>();
  return list.map((projection: Projection, index) => {
    try {
      defineProjection(projection);
    } catch (error) {
      throw new CliError(`the projections module ${file}, item ${index}: ${(error as Error).message}`, 2);
    }
    if (names.has(projection.name)) throw new CliError(`the projections module ${file} names projection ${projection.name} twice`, 2);
    names.add(projection.name);
    return projection;
  });
}

/**
 * The projection `--projection NAME` names among `projections`, or all of them (or, with
 * `defaultToFirst`, the first: `snapshot`'s default). An unknown name is a usage error listing
 * the known ones.
 *
 * @example
 * ```ts
 * chooseProjections(projections, options.projection); // every projection when no name is given
 * ```
 */
export function chooseProjections(projections: readonly Projection[], name: string | undefined, defaultToFirst = false): Projection[] {
  if (name === undefined) return defaultToFirst ? [projections[0]!] : [...projections];
  const chosen = projections.find((projection) => projection.name === name);
  if (chosen === undefined) throw new CliError(`no projection ${JSON.stringify(name)}; the projections are ${projections.map((p) => p.name).join(', ')}`, 2);
  return [chosen];
}

