import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { parseJson } from '../json/parse-json.js';
import { exactInteger } from './exact-integer.js';
import { type ConnectionRetry, retryOnConnectionLoss } from './retry-on-connection-loss.js';
import type { DB } from './schema.js';

/** How to reach PostgreSQL. */
export interface DatabaseOptions {
  /** A libpq connection string, e.g. `postgres://postgres@127.0.0.1:5432/os_audit`. */
  connectionString: string;
  /** Pool size; default 10. */
  maxConnections?: number;
  /** Shown in `pg_stat_activity.application_name`. */
  applicationName?: string;
  /**
   * Told when a connection breaks outside a query (the server restarted, the connection was
   * killed or timed out). The pool drops it and opens another on demand; queries in flight
   * fail with their own error. Default: nothing, since the next query says it anyway.
   */
  onConnectionError?: (error: Error) => void;
  /**
   * Opening a connection is tried again this way while the server cannot be reached (down,
   * restarting, out of connections): every query then waits for it rather than fail at once.
   * Nothing is sent before a connection is open, so this is safe for any query. Default: not at all.
   */
  connectRetry?: ConnectionRetry;
}

const INT8_OID = 20;
const JSON_OID = 114;
const JSONB_OID = 3802;

/**
 * Values are read back exactly. `bigint` columns are numbers: seqs, positions and counters stay
 * far below 2^53, and a larger one is an error, never a rounded value. `json`/`jsonb` go through
 * the lossless parser, so an integer above 2^53 stays a `bigint`.
 */
const exactTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) => {
    if (oid === INT8_OID) return exactInteger;
    if (oid === JSON_OID || oid === JSONB_OID) return parseJson;
    return pg.types.getTypeParser(oid, format as 'text');
  }) as pg.CustomTypesConfig['getTypeParser'],
};

/**
 * Opens a pooled, typed connection to an os-audit database. A connection lost while idle is
 * replaced on demand, never an unhandled error.
 *
 * @example
 * ```ts
 * const db = openDatabase({ connectionString: process.env.DATABASE_URL! });
 * const sessions = await db.selectFrom('sessions').selectAll().execute();
 * await db.destroy();
 * ```
 */
export function openDatabase(options: DatabaseOptions): Kysely<DB> {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.maxConnections ?? 10,
    application_name: options.applicationName ?? 'os-audit',
    types: exactTypes,
  });
  // Without a listener, a connection that breaks while idle or between the statements of a
  // transaction would end the process with an unhandled 'error' event.
  const onConnectionError = options.onConnectionError ?? (() => {});
  pool.on('error', onConnectionError);
  pool.on('connect', (client) => client.on('error', onConnectionError));
  const { connectRetry } = options;
  if (connectRetry !== undefined) {
    const connect = pool.connect.bind(pool);
    pool.connect = ((callback?: Parameters<pg.Pool['connect']>[0]) =>
      callback ? connect(callback) : retryOnConnectionLoss(() => connect(), connectRetry)) as pg.Pool['connect'];
  }
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  pools.set(db, pool);
  return db;
}

const pools = new WeakMap<Kysely<DB>, pg.Pool>();

/**
 * The pool under a database from {@link openDatabase}, for what kysely cannot say (`COPY`);
 * undefined for a transaction or a database made otherwise.
 */
export function poolOf(db: Kysely<DB>): pg.Pool | undefined {
  return pools.get(db);
}
