import { readFile, stat } from 'node:fs/promises';
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import { type CliIo, CliError, withDatabase, write } from '../cli-context.js';
import { countOf } from '../../text/count-of.js';

/**
 * The hash chain of the chosen sessions (all when none are named): a line per broken session,
 * then the counts. Returns how many are broken.
 */
export async function reportEventChain(db: Kysely<DB>, sessions: readonly string[] | undefined, io: CliIo): Promise<number> {
  const { verifyEventChain } = await import('../../integrity/verify-event-chain.js');
  const report = await verifyEventChain(db, { sessions });
  for (const problem of report.problems) await write(io.stdout, `chain: session ${JSON.stringify(problem.sessionId)}: seq ${problem.seq}: ${problem.problem}\n`);
  await write(io.stdout, `chain: verified ${countOf(report.sessions, 'session')} (${countOf(report.events, 'event')}): ${report.problems.length} broken\n`);
  return report.problems.length;
}

/** `verify --digest FILE|DIR [--public-key FILE]`: each digest's file, its place in the chain of digests, and the log against it. */
export async function verifyDigestCommand(url: string, path: string, publicKeyFile: string | undefined, io: CliIo): Promise<void> {
  const [{ readPublicKey }, { verifyDigests }] = await Promise.all([import('../../integrity/digest.js'), import('../../integrity/verify-digest.js')]);
  const publicKey = publicKeyFile === undefined ? undefined : readPublicKey(await readFile(publicKeyFile, 'utf8'), publicKeyFile);
  const isFolder = (await stat(path).catch(() => {
    throw new CliError(`${path}: no such digest file or folder`);
  })).isDirectory();
  const checks = await withDatabase(url, (db) => verifyDigests(db, path, { publicKey, isFolder }), { rideThrough: { io, rerun: 'work' } });
  let failed = 0;
  for (const check of checks) {
    const covered = check.digest === undefined ? '' : `: ${countOf(check.digest.body.sessions, 'session')}, ${countOf(check.digest.body.events, 'event')}, made ${check.digest.body.created_at}`;
    await write(io.stdout, `digest ${check.file}${covered}; signature ${check.signature === 'unchecked' ? 'not checked (no --public-key)' : check.signature}\n`);
    for (const problem of check.fileProblems) await write(io.stdout, `  ${problem}\n`);
    for (const session of check.sessions) await write(io.stdout, `  session ${JSON.stringify(session.sessionId)}: seq ${session.seq}: ${session.problem}\n`);
    if (check.fileProblems.length > 0 || check.sessions.length > 0) failed += 1;
  }
  await write(io.stdout, `verified ${countOf(checks.length, 'digest')}: ${failed} with problems\n`);
  if (failed > 0) throw new CliError(`${failed} of ${countOf(checks.length, 'digest')} ${failed === 1 ? 'does' : 'do'} not hold: the log or the digests changed`);
}
