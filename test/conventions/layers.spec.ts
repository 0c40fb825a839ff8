import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The layering rules, checked on the import statements of the sources. Lower layers know
 * nothing of higher ones, so that each can be read, tested and replaced on its own.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SOURCE_FOLDERS = ['src', 'projections', 'migrations', 'bench', 'scripts'];

/** Every relative import of every TypeScript file under the folders, as repository paths. */
function importGraph(folders: readonly string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const visit = (folder: string) => {
    for (const entry of readdirSync(path.join(ROOT, folder), { withFileTypes: true })) {
      const file = path.posix.join(folder, entry.name);
      if (entry.isDirectory()) visit(file);
      else if (entry.name.endsWith('.ts')) graph.set(file, importsOf(file));
    }
  };
  folders.forEach(visit);
  return graph;
}

/** The specifiers a file imports or re-exports, statically or dynamically; relative ones resolved. */
function importsOf(file: string): string[] {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  const specifiers = [...text.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s+'([^']+)'|^\s*import\s+'([^']+)'|\bimport\(\s*'([^']+)'\s*\)/gm)].map(
    (match) => (match[1] ?? match[2] ?? match[3])!,
  );
  return specifiers.map((specifier) => (specifier.startsWith('.') ? path.posix.join(path.posix.dirname(file), specifier).replace(/\.js$/, '.ts') : specifier));
}

/** `file → import` pairs of files under `from` that break `allowed`. */
function violations(graph: Map<string, string[]>, from: string, allowed: (target: string, file: string) => boolean): string[] {
  return [...graph]
    .filter(([file]) => file.startsWith(`${from}/`))
    .flatMap(([file, targets]) => targets.filter((target) => !allowed(target, file)).map((target) => `${file} → ${target}`));
}

const under = (target: string, ...folders: string[]) => folders.some((folder) => target.startsWith(`${folder}/`));
const isPackage = (target: string) => !target.includes('/') || !target.startsWith('.') && !under(target, ...SOURCE_FOLDERS, 'test');

const graph = importGraph(SOURCE_FOLDERS);

describe('layers', () => {
  it('has every source folder in the graph (the check reads files)', () => {
    expect(graph.size).toBeGreaterThan(200);
    expect(graph.get('src/projector/verify-projection.ts')).toContain('src/stored-log/read-session.ts');
  });

  it('projections import only the public face for projections, kysely, their own folder and other projections’ entries', () => {
    const allowed = (target: string, file: string) => {
      if (target === 'kysely' || target === 'src/projection-api.ts') return true;
      const folder = file.split('/').slice(0, 2).join('/');
      if (file === 'projections/index.ts') return under(target, 'projections');
      return target.startsWith(`${folder}/`) || /^projections\/[^/]+\/index\.ts$/.test(target);
    };
    expect(violations(graph, 'projections', allowed)).toEqual([]);
  });

  it('the engine and the console read the log through src/stored-log, never the store', () => {
    const notStore = (target: string) => !under(target, 'src/store', 'projections', 'src/cli');
    expect(violations(graph, 'src/projector', notStore)).toEqual([]);
    expect(violations(graph, 'src/console', notStore)).toEqual([]);
  });

  it('src/db and migrations import only lower layers: no projection, engine or store', () => {
    const lower = (target: string) => isPackage(target) || under(target, 'src/db', 'src/json', 'src/events', 'src/time', 'src/text', 'src/runtime', 'migrations');
    expect(violations(graph, 'src/db', lower)).toEqual([]);
    expect(violations(graph, 'migrations', lower)).toEqual([]);
  });

  it('src/stored-log and src/events import nothing above them', () => {
    const lower = (target: string) => isPackage(target) || under(target, 'src/db', 'src/json', 'src/events', 'src/stored-log');
    expect(violations(graph, 'src/stored-log', lower)).toEqual([]);
    expect(violations(graph, 'src/events', (target) => isPackage(target) || under(target, 'src/json', 'src/events'))).toEqual([]);
  });

  it('has no import loops', () => {
    const loops: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const stack: string[] = [];
    const visit = (file: string) => {
      state.set(file, 'open');
      stack.push(file);
      for (const target of graph.get(file) ?? []) {
        if (state.get(target) === 'open') loops.push([...stack.slice(stack.indexOf(target)), target].join(' → '));
        else if (!state.has(target) && graph.has(target)) visit(target);
      }
      stack.pop();
      state.set(file, 'done');
    };
    for (const file of graph.keys()) if (!state.has(file)) visit(file);
    expect(loops).toEqual([]);
  });

  it('finds a loop and a forbidden import when there is one (the checks can fail)', () => {
    const bad = new Map([
      ['src/db/a.ts', ['src/store/b.ts']],
      ['src/store/b.ts', ['src/db/a.ts']],
    ]);
    expect(violations(bad, 'src/db', (target) => under(target, 'src/db'))).toEqual(['src/db/a.ts → src/store/b.ts']);
  });
});
