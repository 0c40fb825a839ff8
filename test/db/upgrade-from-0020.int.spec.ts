import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtInProjections } from '../../projections/index.js';
import { migrateToLatest } from '../../src/migrate-to-latest.js';
import type { DB } from '../../src/db/schema.js';
import { verifyEventChain } from '../../src/integrity/verify-event-chain.js';
import { Projector } from '../../src/projector/projector.js';
import { verifyProjection } from '../../src/projector/verify-projection.js';
import { EventStore } from '../../src/store/event-store.js';
import { describeSchema } from '../support/describe-schema.js';
import { restoreDump } from '../support/restore-dump.js';
import type { ScratchDatabase } from '../support/scratch-database.js';
import { createTestDatabase, useTestDatabase } from '../support/test-database.js';

/**
 * A database migrated, imported into and projected by os-audit at migration 0020 (its fixture's
 * README says how it was made), when the engine's migrations still made the OS snapshot's
 * tables: upgraded, it keeps its tables and snapshots as they were, and goes on folding.
 */
const fresh = useTestDatabase();

describe('a database of os-audit at 0020, upgraded', () => {
  let scratch: ScratchDatabase;
  let before: { schema: string; migrations: string[]; snapshots: Snapshots };
  let applied: string[];

  beforeAll(async () => {
    scratch = await createTestDatabase({ migrate: false });
    await restoreDump(scratch.url, new URL('../fixtures/old-databases/at-0020.sql', import.meta.url));
    before = { schema: await describeSchema(scratch.db, { definitions: true }), migrations: await migrationNames(scratch.db), snapshots: await snapshots(scratch.db) };
    applied = await migrateToLatest(scratch.db);
  });

  afterAll(async () => {
    await scratch?.drop();
  });

  it('applies the OS snapshot projection’s first migration only, which changes nothing', async () => {
    expect(applied).toEqual(['os_snapshot/0000-tables']);
    expect(await migrationNames(scratch.db)).toEqual([...before.migrations, 'os_snapshot/0000-tables'].sort());
    expect(await describeSchema(scratch.db, { definitions: true })).toBe(before.schema);
  });

  it('keeps every snapshot of both projections as it was', async () => {
    expect(before.snapshots.os_snapshot_json).toHaveLength(6);
    expect(before.snapshots.os_snapshot_v0_2_60_json).toHaveLength(6);
    expect(await snapshots(scratch.db)).toEqual(before.snapshots);
  });

  it('has the schema of a database migrated now', async () => {
    expect(await describeSchema(scratch.db, { definitions: true })).toBe(await describeSchema(fresh.db, { definitions: true }));
  });

  it('folds events appended after the upgrade, and verifies', async () => {
    const store = new EventStore(scratch.db);
    await store.append('session-a', [{ kind: 'page_in', turn: 3 }, { kind: 'suspended', turn: 4, reason: 'ask_user', pending_calls: ['c2'] }]);
    await store.append('after-upgrade', [
      { kind: 'signal_disposed', turn: 1, signal_id: 'sig-9', disposition: 'queue', queue_depth: 1 },
      { kind: 'operation_cancelled', turn: 2, operation_id: 'op-9', reason: 'user' },
    ]);
    for (const projection of builtInProjections) {
      await new Projector(scratch.db, projection, { pollIntervalMs: 50, leaseTtlMs: 2000 }).catchUp();
      expect(await verifyProjection(scratch.db, projection, { all: true })).toMatchObject({ checked: 7, mismatches: [], corrupt: [], pending: [] });
    }
    expect(await verifyEventChain(scratch.db)).toMatchObject({ sessions: 7, problems: [] });

    const after = await snapshots(scratch.db);
    const sessionA = JSON.parse(after.os_snapshot_json.find(([id]) => id === 'session-a')![1]) as Record<string, unknown>;
    expect(sessionA).toMatchObject({ last_suspend: { turn: 4, reason: 'ask_user', pending_calls: ['c2'] }, page_in_count: 1 });
    const added = JSON.parse(after.os_snapshot_v0_2_60_json.find(([id]) => id === 'after-upgrade')![1]) as Record<string, unknown>;
    expect(added).toMatchObject({ cancellations: [{ turn: 2, operation_id: 'op-9', reason: 'user', pending_call_ids: [] }] });
  });
});

type Snapshots = Record<'os_snapshot_json' | 'os_snapshot_v0_2_60_json', [string, string][]>;

/** Each session's snapshot text in each projection's view, by session. */
async function snapshots(db: Kysely<DB>): Promise<Snapshots> {
  const read = async (view: string) => {
    const { rows } = await sql<{ session_id: string; snapshot: string }>`
      SELECT session_id, snapshot::text AS snapshot FROM ${sql.table(view)} ORDER BY session_id`.execute(db);
    return rows.map((row): [string, string] => [row.session_id, row.snapshot]);
  };
  return { os_snapshot_json: await read('os_snapshot_json'), os_snapshot_v0_2_60_json: await read('os_snapshot_v0_2_60_json') };
}

async function migrationNames(db: Kysely<DB>): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`SELECT name FROM kysely_migration ORDER BY name`.execute(db);
  return rows.map((row) => row.name);
}
