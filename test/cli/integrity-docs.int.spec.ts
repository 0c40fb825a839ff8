import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installBuiltPackage } from '../support/built-package.js';
import { repoRoot } from '../support/cli-process.js';
import { pastTheTriggers } from '../support/past-the-triggers.js';
import { useTestDatabase } from '../support/test-database.js';

/**
 * docs/integrity.md, run as written. Each ```sh block after `<!-- tested -->` runs in bash, in
 * order, in one folder, with an installed build's os-audit on PATH, against a database holding
 * the samples; its standard output must be the ```text block after `<!-- output -->`, where `…`
 * stands for any text within a line. Then an event is changed past the triggers, and each block
 * with an `<!-- output: changed -->` runs again: it must print that and exit 1.
 */
const testDb = useTestDatabase();
const run = promisify(execFile);
const docs = path.join(repoRoot, 'docs', 'integrity.md');

interface Block {
  kind: 'tested' | 'daemon';
  script: string;
  output?: string;
  changed?: string;
}

/** The marked blocks, each output attached to the block before it. */
function readBlocks(text: string): Block[] {
  const blocks: Block[] = [];
  for (const [, mark, body] of text.matchAll(/^<!-- (tested|tested: daemon|output|output: changed) -->\n```[a-z]*\n([\s\S]*?)^```/gm)) {
    if (mark === 'tested' || mark === 'tested: daemon') {
      blocks.push({ kind: mark === 'tested' ? 'tested' : 'daemon', script: body! });
      continue;
    }
    const block = blocks.at(-1);
    expect(block, `${mark} follows a tested block`).toBeDefined();
    if (mark === 'output') block!.output = body!;
    else block!.changed = body!;
  }
  return blocks;
}

/** `actual`, with each line that `expected`'s line matches (`…`: any text) written as expected's, for a readable diff. */
function asDocumented(actual: string, expected: string): string {
  const expectedLines = expected.split('\n');
  return actual
    .split('\n')
    .map((line, index) => {
      const documented = expectedLines[index];
      if (documented === undefined) return line;
      const pattern = new RegExp(`^${documented.split('…').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
      return pattern.test(line) ? documented : line;
    })
    .join('\n');
}

let scratch: string;
let work: string;
let env: NodeJS.ProcessEnv;
let blocks: Block[];
const daemons: ChildProcess[] = [];

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function bash(script: string): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', script], { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A long-running block: started in a process group of its own, stopped (SIGTERM) once its daemon leads. */
async function runDaemon(script: string): Promise<string> {
  const child = spawn('bash', ['-e', '-c', script], { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  daemons.push(child);
  let stderr = '';
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the daemon did not lead within 30 s:\n${stderr}`)), 30_000);
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      if (stderr.includes('"event":"leader"')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void closed.then(() => reject(new Error(`the daemon exited:\n${stderr}`)));
  });
  process.kill(-child.pid!, 'SIGTERM');
  await closed;
  return stderr;
}

async function cli(...args: string[]): Promise<Ran> {
  return bash(['os-audit', ...args].map((arg) => `'${arg}'`).join(' '));
}

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'os-audit-integrity-docs-'));
  const { bin } = await installBuiltPackage(scratch);
  const shims = path.join(scratch, 'bin');
  await mkdir(shims);
  await writeFile(path.join(shims, 'os-audit'), `#!/bin/sh\nexec '${process.execPath}' '${bin}' "$@"\n`);
  await chmod(path.join(shims, 'os-audit'), 0o755);
  // The docs run from a checkout, beside the runtime's log folder (here the samples).
  work = path.join(scratch, 'work');
  await mkdir(work);
  await symlink(path.join(repoRoot, 'scripts'), path.join(work, 'scripts'));
  await symlink(path.join(repoRoot, 'samples'), path.join(work, 'runtime-logs'));
  env = { ...process.env, PATH: `${shims}:${process.env.PATH}`, DATABASE_URL: testDb.url, OS_AUDIT_METRICS_PORT: '0', OS_AUDIT_LOG_FORMAT: 'json' };
  await run(process.execPath, [bin, 'import', path.join(repoRoot, 'samples')], { env });
  blocks = readBlocks(await readFile(docs, 'utf8'));
}, 120_000);

afterAll(async () => {
  for (const daemon of daemons) if (daemon.exitCode === null && daemon.signalCode === null) process.kill(-daemon.pid!, 'SIGKILL');
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('docs/integrity.md', () => {
  it('marks every shell block as tested', async () => {
    const text = await readFile(docs, 'utf8');
    expect(blocks.length).toBe([...text.matchAll(/^```sh$/gm)].length);
  });

  it('runs each tested block as written, and prints what the docs show', async () => {
    for (const block of blocks) {
      if (block.kind === 'daemon') {
        expect(await runDaemon(block.script), block.script).toContain('"event":"stopped"');
        continue;
      }
      const { code, stdout, stderr } = await bash(block.script);
      expect(code, `${block.script}\n${stderr}${stdout}`).toBe(0);
      if (block.output !== undefined) expect(asDocumented(stdout, block.output), block.script).toBe(block.output);
    }
  }, 180_000);

  it('after an event is changed past the triggers: each check the docs show fails, as they show', async () => {
    await pastTheTriggers(testDb.db, async (trx) => {
      await sql`UPDATE session_events SET payload = '{"kind":"suspended","turn":2,"reason":"ask_user","pending_calls":[]}'
                WHERE session_id = 'spec-ask-user' AND seq = 1`.execute(trx);
    });
    const changed = blocks.filter((block) => block.changed !== undefined);
    expect(changed.length).toBeGreaterThanOrEqual(3);
    for (const block of changed) {
      const { code, stdout, stderr } = await bash(block.script);
      expect(code, `${block.script}\n${stderr}`).toBe(1);
      expect(asDocumented(stdout, block.changed!), block.script).toBe(block.changed);
    }
  }, 120_000);

  it('a rewrite with every hash recomputed leaves the chain whole, and the digest catches it', async () => {
    await pastTheTriggers(testDb.db, async (trx) => {
      for (const seq of [1, 2]) {
        await sql`UPDATE session_events AS e SET hash = os_audit_event_hash(p.hash, e.seq, coalesce(e.payload_text, e.payload::text))
                  FROM session_events AS p WHERE p.session_id = e.session_id AND p.seq = e.seq - 1 AND e.session_id = 'spec-ask-user' AND e.seq = ${seq}`.execute(trx);
      }
      await sql`UPDATE sessions SET head_hash = (SELECT hash FROM session_events WHERE session_id = 'spec-ask-user' AND seq = 2) WHERE session_id = 'spec-ask-user'`.execute(trx);
    });
    expect((await cli('verify', 'spec-ask-user')).stdout).toContain('chain: verified 1 session (3 events): 0 broken\n');

    const digests = await cli('verify', '--digest', 'digests', '--public-key', 'digest-key.pub');
    expect(digests.code).toBe(1);
    expect(digests.stdout).toContain('  session "spec-ask-user": seq 2: its hash at seq 2 is not the one the digest holds: the log up to it was rewritten, hashes included\n');

    const offline = await bash('os-audit events spec-ask-user --bare | python3 scripts/verify-chain.py spec-ask-user --digest digests/digest-*.json --public-key digest-key.pub');
    expect(offline.code).toBe(1);
    expect(offline.stdout).toMatch(/^session "spec-ask-user": seq 2: hash 56cefe8b\w+, but the digest holds 83f3a311\w+: the log up to seq 2 is not the one the digest covers$/m);
    expect(offline.stdout).toMatch(/\nFAILED: 1 problem \(above\)\n$/);
  }, 60_000);

  it('verify-chain.py refuses a digest edited, and one signed by another key', async () => {
    const checked = await bash(
      `sed 's/"spec-ask-user",2,"83f3/"spec-ask-user",2,"93f3/' digests/digest-*.json > edited.json
       os-audit digest --new-key other-key
       python3 scripts/verify-chain.py spec-ask-user --digest edited.json --public-key digest-key.pub < spec-ask-user.jsonl || echo "exit $?"
       python3 scripts/verify-chain.py spec-ask-user --digest digests/digest-*.json --public-key other-key.pub < spec-ask-user.jsonl || echo "exit $?"`,
    );
    const lines = checked.stdout.split('\n');
    expect(lines).toContain('digest edited.json: its root is not the hash of its heads: the file was edited');
    expect(lines).toContain('digest edited.json: its signature is not valid for digest-key.pub: the file was edited, or another key signed it');
    expect(lines.filter((line) => line.endsWith('its signature is not valid for other-key.pub: the file was edited, or another key signed it'))).toHaveLength(1);
    expect(lines.filter((line) => line === 'exit 1')).toHaveLength(2);
  }, 60_000);
});
