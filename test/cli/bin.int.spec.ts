import { execFile } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/test-database.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const packageJson = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string> };
/** The package's bin, as `npm run build` builds it (the bundle and its loader). */
const bin = path.join(root, packageJson.bin['os-audit']!);
const testDb = useTestDatabase();

/** Runs the bin; with `builtins`, also returns the Node built-in modules the process loaded. */
async function runBin(args: readonly string[], options: { builtins?: boolean } = {}): Promise<{ stdout: string; builtins: string[] }> {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run npm run build`);
  const list = path.join(tmpdir(), `os-audit-bin-test-${process.pid}.txt`);
  const preload = ['--require', path.join(root, 'test/support/record-builtins.cjs')];
  const env = { ...process.env, DATABASE_URL: testDb.url, RECORD_BUILTINS_TO: list };
  const { stdout } = await run(process.execPath, [...(options.builtins ? preload : []), bin, ...args], { env });
  if (!options.builtins) return { stdout, builtins: [] };
  const builtins = readFileSync(list, 'utf8').split('\n').filter((entry) => entry.startsWith('NativeModule ')).map((entry) => entry.slice('NativeModule '.length));
  rmSync(list, { force: true });
  return { stdout, builtins };
}

describe('the bin (dist/cli, bundled)', () => {
  it('answers --version and --help without loading any database code', async () => {
    const version = await runBin(['--version'], { builtins: true });
    expect(version.stdout).toBe(`${packageJson.version}\n`);
    // pg loads dns (its connection parameters) and crypto (its authentication) as it loads;
    // net says nothing here, since a piped stdout is a socket.
    expect(version.builtins).not.toContain('dns');
    expect(version.builtins).not.toContain('crypto');
    const help = await runBin(['snapshot', '--help'], { builtins: true });
    expect(help.stdout).toMatch(/^Usage: os-audit snapshot \[options\] <session>/);
    expect(help.builtins).not.toContain('dns');
  });

  it('prints a stored snapshot, the same with its code cache as without', async () => {
    for (const args of [['import', path.join(root, 'samples', 'sample-000000.jsonl')], ['project', '--once', '--metrics-port', 'off']]) await runBin(args);
    const cache = path.join(path.dirname(bin), 'os-audit-bundle.cjs.snapshot.cache');
    rmSync(cache, { force: true });
    const first = await runBin(['snapshot', 'sample-000000']);
    expect(existsSync(cache)).toBe(true);
    const second = await runBin(['snapshot', 'sample-000000'], { builtins: true });
    // The check above is worth something only if a command that connects loads dns.
    expect(second.builtins).toContain('dns');
    expect(JSON.parse(first.stdout)).toMatchObject({ last_suspend: expect.anything() });
    expect(second.stdout).toBe(first.stdout);
  });

  it('calls import() only through the dynamic-import hook: in a script run from its code cache, Node 20 has no import()', () => {
    const bundle = readFileSync(path.join(path.dirname(bin), 'os-audit-bundle.cjs'), 'utf8');
    // The hook's own fallback (src/runtime/dynamic-import.ts) is the one import() left; any other one fails at run time.
    expect(bundle.match(/(?<![\w$.])import\(/g)).toHaveLength(1);
  });
});
