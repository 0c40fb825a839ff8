import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SessionFactory } from '../bench/corpus.js';

/**
 * Writes `samples/`, the sessions `npm start` imports on a first run: the two example logs of
 * the spec and a dozen realistic sessions from the benchmark's seeded corpus. Some are finished
 * and some still running (cut before their `run_terminal`), so that every dashboard view has rows.
 * Every built-in projection reads them whole. `samples/older-format/` (not imported by
 * `npm start`) holds sessions of the runtime before v0.2.60, which `os_snapshot_v0_2_60` stops.
 * Run with `npx tsx scripts/generate-samples.ts`; the output is committed and deterministic.
 */
const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const samples = path.join(root, 'samples');
const fixtures = path.join(root, 'test', 'fixtures', 'os-snapshot');

rmSync(samples, { recursive: true, force: true });
mkdirSync(samples);

/** Sessions in the older runtime format, kept few: a newcomer should see mostly sessions that fold whole. */
const OLDER_FORMAT_SESSIONS = 3;

const line = (seq: number, event: unknown) => `${JSON.stringify({ seq, event })}\n`;
for (const name of readdirSync(fixtures).filter((file) => file.startsWith('events_'))) {
  const events = JSON.parse(readFileSync(path.join(fixtures, name), 'utf8')) as unknown[];
  const sessionId = `spec-${name.slice('events_'.length, -'.json'.length).replaceAll('_', '-')}`;
  writeFileSync(path.join(samples, `${sessionId}.jsonl`), events.map((event, seq) => line(seq, event)).join(''));
}

const factory = new SessionFactory({ seed: 'os-audit samples', prefix: 'sample' });
for (let index = 0; index < 12; index++) {
  const script = factory.session(60 + index * 5);
  // A third of the sessions are still running: their log stops before `run_terminal`.
  const written = index % 3 === 2 ? script.length - 7 - index : script.length;
  let text = '';
  for (let seq = 0; seq < written; seq++) {
    const row = script.next();
    text += `{"seq":${row.seq},"event":${row.json}}\n`;
  }
  writeFileSync(path.join(samples, `${script.sessionId}.jsonl`), text);
}

// The runtime before v0.2.60 wrote `budget_exceeded` without `operation_id`.
const olderFormatDir = path.join(samples, 'older-format');
mkdirSync(olderFormatDir);
const olderFormat = new SessionFactory({ seed: 'os-audit older-format samples', prefix: 'older-format' });
for (let index = 0; index < OLDER_FORMAT_SESSIONS; index++) {
  const script = olderFormat.session(80 + index * 10);
  let text = '';
  let withoutOperation = 0;
  for (let seq = 0; seq < script.length; seq++) {
    const row = script.next();
    const json = row.kind === 'budget_exceeded' ? row.json.replace(/"operation_id":"[^"]*",/, '') : row.json;
    if (json !== row.json) withoutOperation++;
    text += `{"seq":${row.seq},"event":${json}}\n`;
  }
  if (withoutOperation === 0) throw new Error(`${script.sessionId} has no budget_exceeded event: choose another length`);
  writeFileSync(path.join(olderFormatDir, `${script.sessionId}.jsonl`), text);
}
