import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../src/migrate-to-latest.js';
import { importLogs } from '../../src/import/import-logs.js';
import { encodeEventText } from '../../src/events/encode-event.js';
import { EventStore } from '../../src/store/event-store.js';
import { verifyOsSnapshots } from '../../src/deprecated-os-snapshot.js';
import { osSnapshotProjector } from '../support/projector-harness.js';
import { restoreDump } from '../support/restore-dump.js';
import type { ScratchDatabase } from '../support/scratch-database.js';
import { createTestDatabase } from '../support/test-database.js';

/**
 * A database of the jsonb era (migrations up to 0006, by os-audit at 46da027, whose 0002 still
 * made the OS snapshot's tables) holding events as that store wrote them, upgraded by 0007:
 * every event stays readable, re-importing the same logs stores nothing new, and the snapshot
 * is folded again under the new rules.
 */
const WRITTEN = [
  // Keys out of jsonb's order and number text jsonb rewrites: jsonb kept the value only.
  '{"kind":"tool_gated","turn":1,"zeta":1,"alpha":1e2}',
  // A string jsonb cannot hold: U+FFFD in payload, the exact text in payload_text.
  '{"kind":"agent_process_changed","turn":1,"agent_id":"a\\u0000b","parent_session_id":null,"state":"running"}',
  // A number beyond numeric: a string in payload, the exact text in payload_text.
  '{"kind":"page_in","turn":2,"big":1e999999}',
];
const OLD_PAYLOADS = [
  '{"kind":"tool_gated","turn":1,"zeta":1,"alpha":1e2}',
  '{"kind":"agent_process_changed","turn":1,"agent_id":"a\\ufffdb","parent_session_id":null,"state":"running"}',
  '{"kind":"page_in","turn":2,"big":"1e999999"}',
];
const OLD_PAYLOAD_TEXTS = [null, WRITTEN[1]!, WRITTEN[2]!];

describe('migration 0007 on a database of the jsonb era', () => {
  let scratch: ScratchDatabase;
  let dir: string;

  beforeAll(async () => {
    scratch = await createTestDatabase({ migrate: false });
    await restoreDump(scratch.url, new URL('../fixtures/old-databases/at-0006.sql', import.meta.url));
    await sql`
      INSERT INTO session_events (session_id, seq, kind, turn, payload, payload_text, validated)
      SELECT 'old', seq - 1, payload ->> 'kind', (payload ->> 'turn')::bigint, payload, payload_text, true
      FROM unnest(${OLD_PAYLOADS}::jsonb[], ${OLD_PAYLOAD_TEXTS}::text[]) WITH ORDINALITY AS e(payload, payload_text, seq)`.execute(scratch.db);
    await sql`INSERT INTO sessions (session_id, last_seq) VALUES ('old', 2)`.execute(scratch.db);
    await sql`UPDATE projection_checkpoints SET position = 3, events_applied = 3 WHERE projection = 'os_snapshot'`.execute(scratch.db);
    await sql`INSERT INTO os_snapshots (session_id, last_seq) VALUES ('old', 2)`.execute(scratch.db);
    await migrateToLatest(scratch.db);
    dir = await mkdtemp(path.join(tmpdir(), 'os-audit-upgrade-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await scratch?.drop();
  });

  async function storedRows() {
    const { rows } = await sql<{ seq: string; payload: string; payload_text: string | null }>`
      SELECT seq, payload::text AS payload, payload_text FROM session_events WHERE session_id = 'old' ORDER BY seq`.execute(scratch.db);
    return rows;
  }

  it('keeps what jsonb kept, and stores the events whose exact text was kept as the store writes them now', async () => {
    const rows = await storedRows();
    expect(rows[0]).toMatchObject({ payload: '{"kind": "tool_gated", "turn": 1, "zeta": 1, "alpha": 100}', payload_text: null });
    const standIn = encodeEventText(WRITTEN[1]!, { sessionId: 'old', seq: 1 });
    expect(standIn.payloadText).toBe(WRITTEN[1]);
    expect(rows[1]).toMatchObject({ payload: standIn.payload, payload_text: WRITTEN[1] });
    expect(rows[2]).toMatchObject({ payload: WRITTEN[2], payload_text: null });
  });

  it('still refuses to change history', async () => {
    await expect(sql`UPDATE session_events SET turn = 9 WHERE session_id = 'old'`.execute(scratch.db)).rejects.toThrow(/append-only/);
  });

  it('stores nothing new when the same log is imported again, and still finds a conflicting event', async () => {
    const lines = WRITTEN.map((event, seq) => `{"seq": ${seq}, "event": ${event}}`).join('\n');
    await writeFile(path.join(dir, 'old.jsonl'), `${lines}\n`);
    const again = await importLogs(new EventStore(scratch.db), dir);
    expect(again).toMatchObject({ newEvents: 0, existingEvents: 3, failures: [] });

    await writeFile(path.join(dir, 'old.jsonl'), `${lines.replace('"zeta":1', '"zeta":2')}\n`);
    const changed = await importLogs(new EventStore(scratch.db), dir);
    expect(changed.failures).toHaveLength(1);
    expect(changed.failures[0]!.message).toMatch(/seq 0/);
  });

  it('folds the snapshot again from the start, under the new rules, equal to the in-memory fold', async () => {
    const checkpoint = await sql<{ position: number; events_applied: number }>`
      SELECT position, events_applied FROM projection_checkpoints WHERE projection = 'os_snapshot'`.execute(scratch.db);
    expect(checkpoint.rows[0]).toMatchObject({ position: 0, events_applied: 0 });

    await osSnapshotProjector(scratch.db).catchUp();
    const blocked = await sql<{ seq: number; reason: string }>`SELECT seq, reason FROM projection_blocked_sessions WHERE session_id = 'old'`.execute(scratch.db);
    expect(blocked.rows).toEqual([{ seq: 1, reason: 'unreadable' }]);
    const report = await verifyOsSnapshots(scratch.db, { all: true });
    expect(report.mismatches).toEqual([]);
  });
});
