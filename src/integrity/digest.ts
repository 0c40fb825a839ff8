import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, sign, verify } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { exactInteger } from '../db/exact-integer.js';
import type { DB } from '../db/schema.js';

/** The format a digest's body names itself by; a reader refuses others. */
export const DIGEST_FORMAT = 'os-audit digest 1';

/** One session as a digest covers it: its id, its last seq and that event's hash (hex). */
export type DigestHead = [sessionId: string, lastSeq: number, headHash: string];

/**
 * What a digest attests: every session's head at one consistent point of the log, and the
 * digest before it. Its hash is the SHA-256 of its body's line as written (see {@link digestText}).
 */
export interface DigestBody {
  format: typeof DIGEST_FORMAT;
  created_at: string;
  database: string;
  /** The snapshot the heads were read in (`pg_current_snapshot()`): transactions before its xmin had ended. */
  snapshot: string;
  xmin: string;
  sessions: number;
  events: number;
  /** SHA-256 over the heads in order (see {@link rootHash}), hex. */
  root: string;
  /** The hash of the previous digest's body, hex; null for a first one. */
  previous: string | null;
  /** Sorted by the session id's UTF-8 bytes. */
  heads: DigestHead[];
}

export interface DigestSignature {
  algorithm: 'ed25519';
  /** The signer's public key, SPKI DER in base64: which key, not a reason to trust it. */
  public_key: string;
  signature: string;
}

export interface Digest {
  body: DigestBody;
  /** The body's line as written, which the hash and the signature cover. */
  bodyLine: string;
  signature?: DigestSignature;
}

/**
 * Reads every session's head in one snapshot (REPEATABLE READ, read only): a committed prefix
 * of each log. Refused while events stored before the chain are not yet chained.
 *
 * @example
 * ```ts
 * const digest = makeDigest(await readDigestBody(db, { previous: null }), privateKey);
 * await writeFile('digest.json', digestText(digest));
 * ```
 */
export async function readDigestBody(db: Kysely<DB>, options: { previous: string | null; now?: Date }): Promise<DigestBody> {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .setAccessMode('read only')
    .execute(async (trx) => {
      const { rows: points } = await sql<{ database: string; snapshot: string; xmin: string }>`
        SELECT current_database() AS database, pg_current_snapshot()::text AS snapshot, pg_snapshot_xmin(pg_current_snapshot())::text AS xmin`.execute(trx);
      const { rows } = await sql<{ session_id: string; last_seq: string; head_hash: Buffer | null }>`
        SELECT session_id, last_seq, head_hash FROM sessions ORDER BY convert_to(session_id, 'UTF8')`.execute(trx);
      const unchained = rows.find((row) => row.head_hash === null);
      if (unchained !== undefined) {
        throw new Error(`session ${JSON.stringify(unchained.session_id)} is not chained yet: run os-audit migrate to finish the chain's backfill, then digest`);
      }
      const heads: DigestHead[] = rows.map((row) => [row.session_id, exactInteger(row.last_seq), row.head_hash!.toString('hex')]);
      const point = points[0]!;
      return {
        format: DIGEST_FORMAT,
        created_at: (options.now ?? new Date()).toISOString(),
        database: point.database,
        snapshot: point.snapshot,
        xmin: point.xmin,
        sessions: heads.length,
        events: heads.reduce((sum, [, lastSeq]) => sum + lastSeq + 1, 0),
        root: rootHash(heads),
        previous: options.previous,
        heads,
      };
    });
}

/** SHA-256 over each head in order: SHA-256 of the session id's UTF-8, last seq as 8 bytes big-endian, head hash. */
export function rootHash(heads: readonly DigestHead[]): string {
  const root = createHash('sha256');
  const seq = Buffer.alloc(8);
  for (const [sessionId, lastSeq, headHash] of heads) {
    seq.writeBigInt64BE(BigInt(lastSeq));
    root.update(createHash('sha256').update(sessionId, 'utf8').digest()).update(seq).update(Buffer.from(headHash, 'hex'));
  }
  return root.digest('hex');
}

/** A digest of `body`, signed when a private key is given. */
export function makeDigest(body: DigestBody, privateKey?: KeyObject): Digest {
  const bodyLine = JSON.stringify(body);
  if (privateKey === undefined) return { body, bodyLine };
  return {
    body,
    bodyLine,
    signature: {
      algorithm: 'ed25519',
      public_key: createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).toString('base64'),
      signature: sign(null, Buffer.from(bodyLine, 'utf8'), privateKey).toString('base64'),
    },
  };
}

/** The file's text: the body's line, then the signature's line when signed. */
export function digestText(digest: Digest): string {
  return `${digest.bodyLine}\n${digest.signature === undefined ? '' : `${JSON.stringify(digest.signature)}\n`}`;
}

/** The digest's own hash, which the next digest names as `previous`. */
export function digestHash(digest: Pick<Digest, 'bodyLine'>): string {
  return createHash('sha256').update(digest.bodyLine, 'utf8').digest('hex');
}

/** Reads a digest file's text, or throws saying what is wrong with it (`name` names it). */
export function parseDigest(text: string, name: string): Digest {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  if (lines.length < 1 || lines.length > 2) throw new Error(`${name}: not an os-audit digest (expected a body line and at most a signature line, found ${lines.length} lines)`);
  const [bodyLine, signatureLine] = lines as [string, string | undefined];
  const body = parseLine(bodyLine, name, 1) as DigestBody;
  if (body.format !== DIGEST_FORMAT) throw new Error(`${name}: line 1: not an os-audit digest of format "${DIGEST_FORMAT}"`);
  if (!Array.isArray(body.heads)) throw new Error(`${name}: line 1: field "heads": expected an array`);
  const signature = signatureLine === undefined ? undefined : (parseLine(signatureLine, name, 2) as DigestSignature);
  if (signature !== undefined && signature.algorithm !== 'ed25519') throw new Error(`${name}: line 2: field "algorithm": expected "ed25519"`);
  return { body, bodyLine, signature };
}

function parseLine(line: string, name: string, number: number): unknown {
  try {
    return JSON.parse(line);
  } catch (error) {
    throw new Error(`${name}: line ${number}: not JSON: ${(error as Error).message}`);
  }
}

/**
 * Whether the digest's signature is valid for `publicKey`; `undefined` when it is not signed.
 * The key embedded in the signature only says which key signed it: checking against it would
 * prove nothing, so the caller gives the key it trusts.
 */
export function signatureValid(digest: Digest, publicKey: KeyObject): boolean | undefined {
  if (digest.signature === undefined) return undefined;
  try {
    return verify(null, Buffer.from(digest.bodyLine, 'utf8'), publicKey, Buffer.from(digest.signature.signature, 'base64'));
  } catch {
    return false;
  }
}

/** A new Ed25519 key pair as PEM: the private key (PKCS#8) and the public key (SPKI). */
export function newSigningKeyPair(): { privateKeyPem: string; publicKeyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privateKeyPem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    publicKeyPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
  };
}

/** A private key from PEM, refused unless it is Ed25519 (`name` names its file). */
export function readPrivateKey(pem: string, name: string): KeyObject {
  return ed25519(() => createPrivateKey(pem), name);
}

/** A public key from PEM (a private key's file gives its public half). */
export function readPublicKey(pem: string, name: string): KeyObject {
  return ed25519(() => createPublicKey(pem), name);
}

function ed25519(read: () => KeyObject, name: string): KeyObject {
  let key: KeyObject;
  try {
    key = read();
  } catch (error) {
    throw new Error(`${name}: not a PEM key: ${(error as Error).message}`);
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`${name}: an ${key.asymmetricKeyType} key; digests are signed with Ed25519 (os-audit digest --new-key FILE makes a pair)`);
  return key;
}
