import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installBuiltPackage } from '../support/built-package.js';
import { useTestDatabase } from '../support/test-database.js';

/**
 * docs/projections.md's "Write your own projection", followed as written: its files copied into a folder
 * beside an installed build of os-audit, its commands run there, its output compared. A third
 * projection is added without a file of os-audit edited.
 */
const testDb = useTestDatabase();
const run = promisify(execFile);
const page = fileURLToPath(new URL('../../docs/projections.md', import.meta.url));

interface Section {
  files: Map<string, string>;
  commands: string[];
  outputs: Map<string, string>;
}

/** The section's files (`<!-- file: NAME -->`), commands (`<!-- run -->`) and outputs (`<!-- output: NAME -->`), each the fenced block after its mark. */
function readSection(text: string): Section {
  const start = text.indexOf('\n## Write your own projection\n');
  expect(start, 'docs/projections.md has the section').toBeGreaterThan(0);
  const end = text.indexOf('\n## ', start + 1);
  const section = text.slice(start, end === -1 ? undefined : end);
  const blocks = [...section.matchAll(/<!-- (file|run|output)(?:: ([^ ]+))? -->\n```[a-z]*\n([\s\S]*?)```/g)];
  const result: Section = { files: new Map(), commands: [], outputs: new Map() };
  for (const [, mark, name, body] of blocks) {
    if (mark === 'file') result.files.set(name!, body!);
    else if (mark === 'output') result.outputs.set(name!, body!);
    else result.commands.push(...body!.split('\n').filter((line) => line.trim() !== ''));
  }
  return result;
}

let scratch: string;
let bin: string;
let app: string;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'os-audit-own-projection-'));
  ({ bin, app } = await installBuiltPackage(scratch));
  await writeFile(path.join(app, 'package.json'), JSON.stringify({ name: 'my-projections', type: 'module', private: true }));
}, 120_000);

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe("docs/projections.md's write your own projection", () => {
  it('adds a third projection in a folder of its own: migrated, folded by the daemon, printed and verified', async () => {
    const section = readSection(await readFile(page, 'utf8'));
    expect([...section.files.keys()]).toEqual(['tool-gates.mjs', 'projections.mjs', 'gates.jsonl', 'tool-gates.test.mjs']);
    for (const [name, body] of section.files) await writeFile(path.join(app, name), body);

    const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: testDb.url };
    const outputs = new Map<string, string>();
    for (const line of section.commands) {
      const exported = /^export (\w+)=(\S+)$/.exec(line);
      if (exported) {
        env[exported[1]!] = exported[2]!;
        continue;
      }
      const [command, ...args] = line.split(/\s+/);
      expect(['os-audit', 'node'], line).toContain(command);
      const { stdout } = await run(process.execPath, command === 'node' ? args : [bin, ...args], { cwd: app, env }).catch(
        (error: { stdout?: string; stderr?: string; message: string }) => {
          throw new Error(`${line} failed: ${error.message}\n${error.stderr ?? ''}${error.stdout ?? ''}`);
        },
      );
      outputs.set(args[0]!, stdout);
    }
    expect(outputs.get('snapshot')).toBe(section.outputs.get('snapshot'));
    expect(outputs.get('verify')).toBe('tool_gates: verified 1 session: 0 differ from their log\n');
    expect(outputs.get('project')).toMatch(/^tool_gates: projected 4 events in 1 batch/m);
    // The kit's tests ran with node's own runner: both passed.
    expect(outputs.get('--test')).toMatch(/^# pass 2$/m);
    expect(outputs.get('migrate')).toContain('tool_gates/0001-tables');

    // The engine registered it and granted on what it declares; it stands beside the built-in ones.
    const cli = (args: string[]) => run(process.execPath, [bin, ...args], { cwd: app, env });
    const statuses = JSON.parse((await cli(['status', '--json'])).stdout) as { projection: string; version: number }[];
    expect(statuses.map((status) => status.projection)).toContain('tool_gates');
    const { rows } = await sql<{ grantee: string; privilege_type: string }>`
      SELECT grantee, privilege_type FROM information_schema.role_table_grants
      WHERE table_name = 'tool_gates' AND grantee LIKE 'os_audit_%' ORDER BY 1, 2`.execute(testDb.db);
    expect(rows.map((row) => `${row.grantee} ${row.privilege_type}`)).toEqual([
      'os_audit_projector DELETE',
      'os_audit_projector INSERT',
      'os_audit_projector SELECT',
      'os_audit_projector UPDATE',
      'os_audit_reader SELECT',
    ]);
    // A second migrate applies nothing; the built-in projections alone still run on this database.
    expect((await cli(['migrate'])).stdout).toBe('schema is up to date; nothing to apply\n');
    const builtIn = { ...env, OS_AUDIT_PROJECTIONS: '' };
    const alone = await run(process.execPath, [bin, 'verify', '--all'], { cwd: app, env: builtIn });
    expect(alone.stdout).not.toContain('tool_gates');
  }, 120_000);
});
