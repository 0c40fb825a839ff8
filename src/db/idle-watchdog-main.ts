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
// No top-level await: bundled, this is a CommonJS script (see scripts/bundle-cli.ts).
void watchIdleLocalPostgres(dataDir, Number(idleMs)).catch((error: unknown) => {
  process.stderr.write(`idle watchdog of ${dataDir}: ${String(error)}\n`);
  process.exitCode = 1;
});
