import { execFile } from 'node:child_process';
import { cp, mkdir, readFile, symlink } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const tscEntry = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));
const bundleScript = fileURLToPath(new URL('../../scripts/bundle-cli.ts', import.meta.url));

/**
 * os-audit as a user installs it: built as `npm run build` builds it, into `scratch/os-audit`
 * (so that the repository's own `dist/` is not involved), and linked into an application folder
 * `scratch/app` as `node_modules/os-audit` (what `npm link os-audit` does). Returns both folders
 * and the CLI that package.json's "bin" names (the bundle).
 *
 * @example
 * ```ts
 * const { app, bin } = await installBuiltPackage(await mkdtemp(path.join(tmpdir(), 'os-audit-')));
 * await run(process.execPath, [bin, 'migrate'], { cwd: app });
 * ```
 */
export async function installBuiltPackage(scratch: string): Promise<{ pkg: string; app: string; bin: string }> {
  const pkg = path.join(scratch, 'os-audit');
  await mkdir(pkg);
  await cp(path.join(repoRoot, 'package.json'), path.join(pkg, 'package.json'));
  await symlink(path.join(repoRoot, 'node_modules'), path.join(pkg, 'node_modules'));
  await run(process.execPath, [tscEntry, '-p', path.join(repoRoot, 'tsconfig.build.json'), '--outDir', path.join(pkg, 'dist')]).catch(
    (error: { stdout?: string; message: string }) => {
      throw new Error(`the build failed: ${error.stdout ?? error.message}`);
    },
  );
  await run(process.execPath, ['--import', 'tsx', bundleScript, path.join(pkg, 'dist')]).catch((error: { stderr?: string; message: string }) => {
    throw new Error(`the CLI's bundle failed: ${error.stderr ?? error.message}`);
  });
  const { bin } = JSON.parse(await readFile(path.join(pkg, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  const app = path.join(scratch, 'app');
  await mkdir(path.join(app, 'node_modules'), { recursive: true });
  await symlink(pkg, path.join(app, 'node_modules', 'os-audit'));
  return { pkg, app, bin: path.join(pkg, bin['os-audit']!) };
}

/** The TypeScript compiler of the repository, for type-checking what a user writes. */
export const typescriptCompiler = tscEntry;
