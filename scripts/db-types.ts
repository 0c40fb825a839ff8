import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));
const CODEGEN_BIN = fileURLToPath(new URL('../node_modules/kysely-codegen/dist/cli/bin.js', import.meta.url));
export const SCHEMA_TYPES_FILE = fileURLToPath(new URL('../src/db/schema.ts', import.meta.url));

/**
 * The DB types kysely-codegen generates from the migrated database at `url`, with the
 * project's `.kysely-codegenrc.json` (exact int8, json and jsonb column types).
 */
export async function generateDbTypes(url: string): Promise<string> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [CODEGEN_BIN, '--url', url, '--print', '--log-level', 'silent'],
    { cwd: PROJECT_ROOT, maxBuffer: 16 * 2 ** 20 },
  );
  return `${stdout.trimEnd()}\n`;
}
