import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/**
 * PostgresSessionLog and its kernelJournal are the SDK's SessionLog and KernelJournal as the
 * SDK declares them, at 0.2.36 and v0.2.60, without a cast: a TypeScript program assigns them
 * and the compiler must accept it (and refuse a wrong event for a typed log). Needs the SDK
 * prepared in .sdk/ (skipped without it, except in CI, where it fails).
 */
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const declarations = {
  v036: path.join(repoRoot, '.sdk/0.2.36/node/decl/runtime/session-log.js'),
  v060: path.join(repoRoot, '.sdk/0.2.60/node/dist/index.js'),
};
const prepared = existsSync(declarations.v036.replace(/\.js$/, '.d.ts')) && existsSync(declarations.v060.replace(/\.js$/, '.d.ts'));
const inCi = process.env.CI === 'true';
const tscEntry = path.join(repoRoot, 'node_modules/typescript/bin/tsc');

const program = `
import type { SessionLog as SessionLog036, SessionEvent as SessionEvent036 } from '${declarations.v036}';
import type { KernelJournal, SessionEvent, SessionLog } from '${declarations.v060}';
import { PostgresSessionLog } from '${path.join(repoRoot, 'src/index.js')}';

const options = { connectionString: 'postgres://127.0.0.1/x' };
export const untyped036: SessionLog036 = PostgresSessionLog.connect(options);
export const typed036: SessionLog036 = PostgresSessionLog.connect<SessionEvent036>(options);
export const untyped: SessionLog = PostgresSessionLog.connect(options);
const typed = PostgresSessionLog.connect<SessionEvent>(options);
export const asSdk: SessionLog = typed;
export const journal: KernelJournal = typed.kernelJournal;
export const viaLog: SessionLog & { kernelJournal: KernelJournal } = new PostgresSessionLog(null as never);
export async function refused(): Promise<void> {
  // @ts-expect-error a typed log takes the SDK's events only
  await typed.append('s', { kind: 'page_in', turn: 'one', entry_count: 1 });
}
`;

describe.skipIf(!prepared && !inCi)("the SDK's types", () => {
  it('take PostgresSessionLog as their SessionLog and its kernelJournal as their KernelJournal, at both versions, without a cast', async () => {
    expect(prepared, 'the SDK must be prepared in CI: .ci/run runs bash scripts/sdk/prepare-sdk.sh').toBe(true);
    const dir = await mkdtemp(path.join(repoRoot, '.sdk', 'types-'));
    try {
      await writeFile(path.join(dir, 'program.ts'), program);
      const config = { compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] }, files: ['program.ts'] };
      await writeFile(path.join(dir, 'tsconfig.json'), JSON.stringify(config));
      const result = await promisify(execFile)(process.execPath, [tscEntry, '-p', dir], { cwd: repoRoot }).then(
        () => '',
        (error: { stdout?: string; message: string }) => error.stdout ?? error.message,
      );
      expect(result).toBe('');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
