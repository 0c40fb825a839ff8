import { type Kysely, sql } from 'kysely';
import { storeIsDistributed } from '../../src/db/distributed-store.js';
import type { DB } from '../../src/db/schema.js';

/** What `ALTER TABLE … TRIGGER` puts a trigger back to, by `pg_trigger.tgenabled`. */
const ENABLED_AS: Readonly<Record<string, string>> = { O: 'ENABLE', A: 'ENABLE ALWAYS', R: 'ENABLE REPLICA', D: 'DISABLE' };

/**
 * Runs `work` as a superuser who gets past every trigger of `sessions` and `session_events`
 * that fires on INSERT, UPDATE or DELETE (those that fire always too), in one transaction. Each
 * is put back as it was. This is what `ALTER TABLE … DISABLE TRIGGER` lets the owner do: nothing
 * in the database can stop it, and only the chain and digests kept elsewhere show it. On Citus the ALTERs
 * reach the shards' triggers once `citus.enable_unsafe_triggers` is on.
 */
export async function pastTheTriggers(db: Kysely<DB>, work: (trx: Kysely<DB>) => Promise<void>): Promise<void> {
  await db.transaction().execute(async (trx) => {
    // tgtype bits: 4 INSERT, 8 DELETE, 16 UPDATE.
    const { rows: triggers } = await sql<{ table_name: string; name: string; enabled: string }>`
      SELECT tgrelid::regclass::text AS table_name, tgname AS name, tgenabled AS enabled FROM pg_trigger
      WHERE tgrelid IN ('sessions'::regclass, 'session_events'::regclass) AND NOT tgisinternal AND tgtype & 28 <> 0`.execute(trx);
    if (await storeIsDistributed(trx)) await sql`SET LOCAL citus.enable_unsafe_triggers = on`.execute(trx);
    const alter = (trigger: (typeof triggers)[number], enabled: string) =>
      sql`ALTER TABLE ${sql.table(trigger.table_name)} ${sql.raw(ENABLED_AS[enabled]!)} TRIGGER ${sql.id(trigger.name)}`.execute(trx);
    for (const trigger of triggers) await alter(trigger, 'D');
    await work(trx);
    for (const trigger of triggers) await alter(trigger, trigger.enabled);
  });
}
