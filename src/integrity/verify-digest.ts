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
 * Checks digest files (one, or every `*.json` of a folder, in name order, which is the order
 * the daemon and `os-audit digest --dir` write them in): each one's signature with `publicKey`,
 * its root against its heads, that each names the one before it, and that the log still holds
 * exactly what each covers.
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
  const seqs = heads.map(([, lastSeq]) => lastSeq);
  const hashes = heads.map(([, , headHash]) => Buffer.from(headHash, 'hex'));
  const { rows: covered } = await sql<{ session_id: string; last_seq: string; stored_hash: Buffer | null; log_end: string | null }>`
    SELECT d.session_id, d.last_seq, e.hash AS stored_hash, (SELECT max(l.seq) FROM session_events AS l WHERE l.session_id = d.session_id) AS log_end
    FROM unnest(${ids}::text[], ${seqs}::bigint[], ${hashes}::bytea[]) AS d(session_id, last_seq, head_hash)
    LEFT JOIN session_events AS e ON e.session_id = d.session_id AND e.seq = d.last_seq
    WHERE e.hash IS DISTINCT FROM d.head_hash`.execute(db);
  const rewritten: string[] = [];
  for (const row of covered) {
    const lastSeq = exactInteger(row.last_seq);
    const sessionId = row.session_id;
    if (row.log_end === null) {
      problems.push({ sessionId, seq: 0, problem: `the session is gone: the digest covers its seqs 0 to ${lastSeq}` });
    } else if (row.stored_hash === null && exactInteger(row.log_end) < lastSeq) {
      const logEnd = exactInteger(row.log_end);
      problems.push({ sessionId, seq: logEnd + 1, problem: `its log ends at seq ${logEnd}, but the digest covers it up to seq ${lastSeq}: events were removed` });
    } else {
      rewritten.push(sessionId);
    }
  }
  // Where the chain itself shows the change, the links above name its first seq; else the log was rewritten with its hashes.
  const broken = new Set(links.map((problem) => problem.sessionId));
  for (const sessionId of rewritten.filter((id) => !broken.has(id))) {
    const lastSeq = coveredSeq.get(sessionId)!;
    problems.push({ sessionId, seq: lastSeq, problem: `its hash at seq ${lastSeq} is not the one the digest holds: the log up to it was rewritten, hashes included` });
  }
  const { rows: backdated } = await sql<{ session_id: string; seq: string }>`
    SELECT e.session_id, min(e.seq) AS seq
    FROM session_events AS e
    LEFT JOIN unnest(${ids}::text[], ${seqs}::bigint[]) AS d(session_id, last_seq) ON d.session_id = e.session_id
    WHERE e.transaction_id < ${xmin}::xid8 AND (d.session_id IS NULL OR e.seq > d.last_seq)
    GROUP BY e.session_id`.execute(db);
  for (const row of backdated) {
    problems.push({ sessionId: row.session_id, seq: exactInteger(row.seq), problem: 'written by a transaction that had ended before the digest, which does not hold it: inserted into the past' });
  }
  return firstPerSession(problems);
}
