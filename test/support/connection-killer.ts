import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { Prng } from '../../bench/prng.js';

/** A loop that kills connections with `pg_terminate_backend`; see {@link startConnectionKiller}. */
export interface ConnectionKiller {
  /** Connections terminated so far. */
  readonly killed: number;
  /** Rounds in which at least one connection was terminated. */
  readonly rounds: number;
  /** Ends the loop (after the round under way). */
  stop(): Promise<void>;
}

export interface ConnectionKillerOptions {
  /** A superuser (or `pg_signal_backend`) connection string of the server. */
  adminUrl: string;
  /** The database whose connections die. */
  database: string;
  /** `application_name LIKE` this pattern, e.g. `fault-%`: only these connections die. */
  applicationNames: string;
  /** Shortest and longest pause between rounds (ms), drawn from `random`. */
  intervalMs: readonly [number, number];
  random: Prng;
}

/**
 * Terminates every connection of `database` whose `application_name` is LIKE
 * `applicationNames`, at random intervals, until `stop()`: what a failover, a proxy restart or
 * an administrator does to a running daemon and its writers.
 *
 * @example
 * ```ts
 * const killer = startConnectionKiller({ adminUrl, database: 'os_audit', applicationNames: 'fault-%', intervalMs: [200, 1500], random: new Prng(1) });
 * await killer.stop();
 * console.log(killer.killed);
 * ```
 */
export function startConnectionKiller(options: ConnectionKillerOptions): ConnectionKiller {
  const state = { killed: 0, rounds: 0, stopping: false };
  const loop = (async () => {
    let client: pg.Client | undefined;
    while (!state.stopping) {
      await sleep(options.random.int(options.intervalMs[0], options.intervalMs[1]));
      if (state.stopping) break;
      try {
        client ??= await connect(options.adminUrl);
        const { rows } = await client.query<{ n: number }>(
          `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
           WHERE datname = $1 AND application_name LIKE $2 AND pid <> pg_backend_pid()`,
          [options.database, options.applicationNames],
        );
        state.killed += rows[0]!.n;
        if (rows[0]!.n > 0) state.rounds += 1;
      } catch {
        await client?.end().catch(() => {});
        client = undefined; // the server is restarting, say: try again next round
      }
    }
    await client?.end().catch(() => {});
  })();
  return {
    get killed() {
      return state.killed;
    },
    get rounds() {
      return state.rounds;
    },
    async stop() {
      state.stopping = true;
      await loop;
    },
  };
}

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: 'os-audit-connection-killer' });
  client.on('error', () => {}); // a server restart ends this connection too: the loop reconnects
  await client.connect();
  return client;
}
