import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { KeyObject } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { exactInteger } from '../db/exact-integer.js';
import type { DB } from '../db/schema.js';
import { type Digest, digestHash, parseDigest, rootHash, signatureValid } from './digest.js';
import { type ChainProblem, firstPerSession, verifyEventChain } from './verify-event-chain.js';

/** What a check of one digest file found. */
export interface DigestFileCheck {
  file: string;
  digest?: Digest;
  /** `unchecked`: signed, but no public key was given to check it with. */
  signature: 'valid' | 'invalid' | 'unsigned' | 'unchecked';
  /** What is wrong with the file itself or its place in the chain of digests. */
  fileProblems: string[];
  /** Sessions whose log no longer holds what the digest covers, each at its first seq affected. */
  sessions: ChainProblem[];
}

/**
 * Checks digest files: one, or every `*.json` of a folder in name order, the order the daemon
 * and `os-audit digest --dir` write them in. It checks each one's signature with `publicKey`
 * and its root against its heads. It checks that each names the one before it, and that the log
 * still holds exactly what each covers.
 */
export async function verifyDigests(db: Kysely<DB>, path: string, options: { publicKey?: KeyObject; isFolder: boolean }): Promise<DigestFileCheck[]> {
  const files = options.isFolder ? (await readdir(path)).filter((name) => name.endsWith('.json')).sort().map((name) => join(path, name)) : [path];
  if (files.length === 0) throw new Error(`${path}: no digest (*.json) in this folder`);
  const checks: DigestFileCheck[] = [];
  // One pass over every link serves every digest.
  let chain: ChainProblem[] | undefined;
  let before: DigestFileCheck | undefined;
  for (const file of files) {
    const check = await checkDigestFile(file, options.publicKey);
    if (before?.digest !== undefined && check.digest !== undefined && check.digest.body.previous !== digestHash(before.digest)) {
      check.fileProblems.push(`it does not follow ${before.file}: a digest between them is missing, or one of them was edited`);
    }
    if (check.digest !== undefined) check.sessions = await verifyLogAgainstDigest(db, check.digest, (chain ??= (await verifyEventChain(db)).problems));
    checks.push(check);
    before = check;
  }
  return checks;
}

async function checkDigestFile(file: string, publicKey: KeyObject | undefined): Promise<DigestFileCheck> {
  const check: DigestFileCheck = { file, signature: 'unsigned', fileProblems: [], sessions: [] };
  try {
    check.digest = parseDigest(await readFile(file, 'utf8'), file);
  } catch (error) {
    check.fileProblems.push((error as Error).message);
    return check;
  }
  const { body } = check.digest;
  const valid = publicKey === undefined ? undefined : signatureValid(check.digest, publicKey);
  check.signature = check.digest.signature === undefined ? 'unsigned' : valid === undefined ? 'unchecked' : valid ? 'valid' : 'invalid';
  if (check.signature === 'invalid') check.fileProblems.push('its signature is not valid for the public key given: the file was edited, or another key signed it');
  if (publicKey !== undefined && check.signature === 'unsigned') check.fileProblems.push('it is not signed');
  if (rootHash(body.heads) !== body.root) check.fileProblems.push('its root is not the hash of its heads: the file was edited');
  return check;
}

/**
 * Where the log no longer holds what `digest` covers: a session gone, events removed after the
 * digest's head or changed before it, events written by transactions older than the digest
 * where it holds none. Each session is reported once, at its first seq affected.
 */
export async function verifyLogAgainstDigest(db: Kysely<DB>, digest: Digest, chain?: readonly ChainProblem[]): Promise<ChainProblem[]> {
  const { heads, xmin } = digest.body;
  const coveredSeq = new Map(heads.map(([sessionId, lastSeq]) => [sessionId, lastSeq]));
  // A change before a digest's head leaves that head's hash as it was: the chain's links show it.
  const links = chain ?? (await verifyEventChain(db, { sessions: heads.map(([sessionId]) => sessionId) })).problems;
  const problems: ChainProblem[] = links.filter((problem) => problem.seq <= (coveredSeq.get(problem.sessionId) ?? -1));
  const ids = heads.map(([sessionId]) => sessionId);
  // Inner joins and plain filters only: Citus plans them over the shards, with the digest's heads as an intermediate result.
  const { rows: atHeads } = await sql<{ session_id: string; hash: Buffer | null }>`
    SELECT e.session_id, e.hash
    FROM session_events AS e
    JOIN (SELECT unnest(${ids}::text[]) AS session_id, unnest(${heads.map(([, lastSeq]) => lastSeq)}::bigint[]) AS seq) AS d
      ON d.session_id = e.session_id AND d.seq = e.seq`.execute(db);
  const hashAtHead = new Map(atHeads.map((row) => [row.session_id, row.hash?.toString('hex')]));
  const { rows: ends } = await sql<{ session_id: string; log_end: string }>`
    SELECT session_id, max(seq) AS log_end FROM session_events WHERE session_id = ANY(${ids}::text[]) GROUP BY session_id`.execute(db);
  const logEnds = new Map(ends.map((row) => [row.session_id, exactInteger(row.log_end)]));
  const broken = new Set(links.map((problem) => problem.sessionId));
  for (const [sessionId, lastSeq, headHash] of heads) {
    const logEnd = logEnds.get(sessionId);
    if (logEnd === undefined) {
      problems.push({ sessionId, seq: 0, problem: `the session is gone: the digest covers its seqs 0 to ${lastSeq}` });
    } else if (logEnd < lastSeq) {
      problems.push({ sessionId, seq: logEnd + 1, problem: `its log ends at seq ${logEnd}, but the digest covers it up to seq ${lastSeq}: events were removed` });
    } else if (hashAtHead.get(sessionId) !== headHash && !broken.has(sessionId)) {
      // Where the chain itself shows the change, its links above name the first seq; here it was rewritten with its hashes.
      problems.push({ sessionId, seq: lastSeq, problem: `its hash at seq ${lastSeq} is not the one the digest holds: the log up to it was rewritten, hashes included` });
    }
  }
  const { rows: backdated } = await sql<{ session_id: string; first_seq: string; last_seq: string }>`
    SELECT session_id, min(seq) AS first_seq, max(seq) AS last_seq FROM session_events WHERE transaction_id < ${xmin}::xid8 GROUP BY session_id`.execute(db);
  for (const row of backdated) {
    const covered = coveredSeq.get(row.session_id);
    if (covered !== undefined && exactInteger(row.last_seq) <= covered) continue;
    const seq = covered === undefined ? exactInteger(row.first_seq) : covered + 1;
    problems.push({ sessionId: row.session_id, seq, problem: 'written by a transaction that had ended before the digest, which does not hold it: inserted into the past' });
  }
  return firstPerSession(problems);
}
