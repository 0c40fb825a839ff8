import { randomBytes } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import type { DB } from '../db/schema.js';

/** The channel of the probe: not the appends' one, so that no projector wakes for it. */
const PROBE_CHANNEL = 'os_audit_listen_probe';

/**
 * Whether a NOTIFY sent through `db` reaches a `LISTEN` on `listenUrl` within `timeoutMs`
 * (default 2000). It does not behind a pooler in transaction mode (PgBouncer): between
 * transactions the pooler gives the listening session's server connection to other clients,
 * and what it hears meanwhile reaches no one. A session that notifies itself hears it even
 * there: the NOTIFY goes through `db`, as appends do. Resolves `undefined` when the probe
 * cannot connect (the listener reports that itself) or `signal` aborts.
 *
 * @example
 * ```ts
 * if ((await notificationsArrive(db, process.env.DATABASE_URL!)) === false) console.warn('no NOTIFY arrives: polling');
 * ```
 */
export async function notificationsArrive(db: Kysely<DB>, listenUrl: string, options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<boolean | undefined> {
  const payload = randomBytes(8).toString('hex');
  const client = new pg.Client({ connectionString: listenUrl, application_name: 'os-audit-listen-probe' });
  client.on('error', () => {});
  let stop = () => {};
  const stopped = new Promise<undefined>((resolve) => (stop = () => resolve(undefined)));
  options.signal?.addEventListener('abort', stop, { once: true });
  if (options.signal?.aborted) stop();
  try {
    const heard = new Promise<true>((resolve) => client.on('notification', (message) => message.payload === payload && resolve(true)));
    await client.connect();
    await client.query(`LISTEN ${PROBE_CHANNEL}`);
    await sql`SELECT pg_notify(${PROBE_CHANNEL}, ${payload})`.execute(db);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), options.timeoutMs ?? 2000)));
    try {
      return await Promise.race([heard, timedOut, stopped]);
    } finally {
      clearTimeout(timer);
    }
  } catch {
    return undefined;
  } finally {
    options.signal?.removeEventListener('abort', stop);
    await client.end().catch(() => {});
  }
}
