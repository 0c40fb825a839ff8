import { type Kysely, sql } from 'kysely';

/**
 * True when the store is distributed by Citus: migration 0012 ran on a Citus coordinator and
 * created `projection_work`, which only a distributed store has. `session_events` is then
 * hash-distributed, and the projector and the writers take the paths that hold on a cluster
 * (see docs/scale-out.md).
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
  if (await isStoreDistributed(db)) await notifyAppended(db);
}

/**
 * Wakes the projectors on the commit of the transaction `db` is in (call it on Citus only:
 * on one server the store's trigger does it). Returns the transaction's id on the coordinator,
 * which its events' `transaction_id` hold. Also returns the connection's global process id
 * (`citus_stat_activity.global_pid`), shared by its backends on the coordinator and workers.
 * With it another connection can wait until that work has ended ({@link distributedWorkEnded}).
 */
export async function notifyAppended(db: Kysely<any>): Promise<{ transactionId: string; globalPid: string }> {
  const { rows } = await sql<{ transaction_id: string; global_pid: string }>`
    SELECT pg_notify('os_audit_events_appended', ''), pg_current_xact_id()::text AS transaction_id, citus_backend_gpid()::text AS global_pid`.execute(db);
  return { transactionId: rows[0]!.transaction_id, globalPid: rows[0]!.global_pid };
}

/**
 * Whether every backend of the coordinator's connection `globalPid` (its own, and those that
 * worked for it on the workers) is gone or idle outside a transaction. Then whatever
 * transaction it had open on any node has committed or rolled back there. On Citus a transaction that wrote
 * on one worker commits there before the coordinator commits, so the coordinator's transaction
 * status alone does not tell when its rows on the worker are settled.
 */
export async function distributedWorkEnded(db: Kysely<any>, globalPid: string): Promise<boolean> {
  const { rows } = await sql<{ busy: boolean }>`
    SELECT EXISTS (SELECT FROM citus_stat_activity WHERE global_pid = ${globalPid}::bigint AND state IS DISTINCT FROM 'idle') AS busy`.execute(db);
  return !rows[0]!.busy;
}
