import { type Kysely, sql } from 'kysely';

/**
 * True when the store is distributed by Citus (migration 0012 ran on a Citus coordinator, and
 * created `projection_work`, which only a distributed store has):
 * `session_events` is then a hash-distributed table, and the projector and the writers take
 * the paths that hold on a cluster (see docs/scale-out.md).
 *
 * @example
 * ```ts
 * if (await storeIsDistributed(db)) console.log('on Citus: the projector finds new events by seq');
 * ```
 */
export async function storeIsDistributed(db: Kysely<any>): Promise<boolean> {
  const { rows } = await sql<{ distributed: boolean }>`
    SELECT to_regclass('projection_work') IS NOT NULL AS distributed`.execute(db);
  return rows[0]?.distributed ?? false;
}

const answers = new WeakMap<Kysely<any>, Promise<boolean>>();

/**
 * {@link storeIsDistributed}, asked once per Kysely instance (a transaction's is its own): for
 * the writers and the projector, which ask at every write or batch. Ask it after `migrate`.
 */
export function isStoreDistributed(db: Kysely<any>): Promise<boolean> {
  let answer = answers.get(db);
  if (answer === undefined) {
    answer = storeIsDistributed(db);
    answer.catch(() => answers.delete(db));
    answers.set(db, answer);
  }
  return answer;
}

/**
 * On Citus, wakes the projectors listening on the coordinator (`os_audit_events_appended`),
 * which the store's trigger cannot: it fires on the workers. In a transaction, on its commit.
 */
export async function notifyAppendedOnCitus(db: Kysely<any>): Promise<void> {
  if (await isStoreDistributed(db)) await sql`SELECT pg_notify('os_audit_events_appended', '')`.execute(db);
}
