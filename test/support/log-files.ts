import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';
import type { JsonObject } from '../../src/json/json-value.js';

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

/** A plausible event for position `seq` of a session: kinds the snapshot reads and others. */
export function sampleEvent(seq: number): JsonObject {
  const turn = Math.floor(seq / 4);
  switch (seq % 5) {
    case 0:
      return { kind: 'agent_process_changed', turn, agent_id: `child-${seq % 3}`, parent_session_id: 'p', role: 'worker', isolation: 'shared', context_inheritance: 'none', state: seq % 2 ? 'joined' : 'running', permitted_capability_ids: [] };
    case 1:
      return { kind: 'signal_disposed', turn, signal_id: `sig-${seq}`, disposition: 'queue', queue_depth: seq % 4 };
    case 2:
      return { kind: 'llm_completed', turn, message: { role: 'assistant', content: `thinking about step ${seq}` } };
    case 3:
      return { kind: 'tool_gated', turn, call_id: `c${seq}`, tool: 'shell', reason: 'ask_user' };
    default:
      return { kind: 'page_out', turn, summary: 'paged', message_count: 3 };
  }
}
