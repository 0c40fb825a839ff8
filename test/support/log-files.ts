import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

/** A temporary folder for the calling test file, removed after its tests. */
export function useTempDir(prefix = 'os-audit-'): () => string {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    const dir = mkdtempSync(path.join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
}

/** The runtime's per-session file format: `{"seq":N,"event":{…}}` per line. */
export function writeSessionFile(dir: string, sessionId: string, lines: readonly string[]): string {
  const file = path.join(dir, `${sessionId}.jsonl`);
  writeFileSync(file, lines.map((line) => `${line}\n`).join(''));
  return file;
}

export function sessionLine(seq: number, event: object | string): string {
  return `{"seq":${seq},"event":${typeof event === 'string' ? event : JSON.stringify(event)}}`;
}

// Here for the tests that import it with the other log helpers; its home has no vitest in it.
export { sampleEvent } from './sample-event.js';
