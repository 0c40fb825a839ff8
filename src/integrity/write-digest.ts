import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { KeyObject } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { type Digest, digestHash, digestText, makeDigest, parseDigest, readDigestBody } from './digest.js';

export interface WriteDigestOptions {
  /** A folder of digests: the new one follows its latest and is written beside it. */
  dir?: string;
  /** A file to write (else the text is only returned). */
  out?: string;
  /** The digest this one follows, when not written into a folder. */
  previousFile?: string;
  privateKey?: KeyObject;
  now?: Date;
}

/**
 * Makes a digest of the log as it is now, chained to the previous one, signed when a key is
 * given, and writes it (to a folder under a name that sorts by time, or to a file). The file
 * appears whole or not at all: it is written beside its name, then renamed.
 *
 * @example
 * ```ts
 * const { path } = await writeDigest(db, { dir: '/var/lib/os-audit/digests', privateKey });
 * ```
 */
export async function writeDigest(db: Kysely<DB>, options: WriteDigestOptions): Promise<{ digest: Digest; path?: string; text: string }> {
  const now = options.now ?? new Date();
  let previous: string | null = null;
  if (options.dir !== undefined) {
    await mkdir(options.dir, { recursive: true });
    const latest = (await readdir(options.dir)).filter((name) => DIGEST_FILE.test(name)).sort().at(-1);
    if (latest !== undefined) previous = await hashOfFile(join(options.dir, latest));
  } else if (options.previousFile !== undefined) {
    previous = await hashOfFile(options.previousFile);
  }
  const digest = makeDigest(await readDigestBody(db, { previous, now }), options.privateKey);
  const text = digestText(digest);
  const path = options.dir !== undefined ? join(options.dir, digestFileName(now)) : options.out;
  if (path !== undefined) {
    await writeFile(`${path}.partial`, text, { flag: 'w' });
    await rename(`${path}.partial`, path);
  }
  return { digest, path, text };
}

async function hashOfFile(file: string): Promise<string> {
  return digestHash(parseDigest(await readFile(file, 'utf8'), file));
}

/** `digest-2026-12-07T11-08-00.123Z.json`: names that sort as the digests were made. */
export function digestFileName(at: Date): string {
  return `digest-${at.toISOString().replaceAll(':', '-')}.json`;
}

const DIGEST_FILE = /^digest-.*\.json$/;
