/**
 * The watchdog of an embedded PostgreSQL, started detached by `startLocalPostgres` with an idle
 * time: stops the server once it has had no user for that long (see `watchIdleLocalPostgres`).
 *
 *   node idle-watchdog-main.js DATA_DIR IDLE_MS
 */
import { watchIdleLocalPostgres } from './local-postgres.js';

const [dataDir, idleMs] = process.argv.slice(2);
if (dataDir === undefined || !/^\d+$/.test(idleMs ?? '')) {
  process.stderr.write('usage: idle-watchdog-main DATA_DIR IDLE_MS\n');
  process.exit(2);
}
await watchIdleLocalPostgres(dataDir, Number(idleMs));
