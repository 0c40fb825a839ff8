import { createHash } from 'node:crypto';

/**
 * The hash chain of a session's log, as migration 0017 has the database compute it
 * (docs/integrity.md): pure functions, for digests, checks and tools outside the database.
 *
 * @example
 * ```ts
 * let hash = chainStart('session-1');
 * for (const [seq, text] of ['{"kind":"page_in","turn":1}'].entries()) hash = eventHash(hash, seq, text);
 * hash.toString('hex'); // the session's head hash after seq 0
 * ```
 */
export function chainStart(sessionId: string): Buffer {
  return createHash('sha256').update(sessionId, 'utf8').digest();
}

/** SHA-256 of the previous hash, the seq as 8 bytes big-endian, and the stored text's UTF-8. */
export function eventHash(previous: Buffer, seq: number, storedText: string): Buffer {
  const seqBytes = Buffer.alloc(8);
  seqBytes.writeBigInt64BE(BigInt(seq));
  return createHash('sha256').update(previous).update(seqBytes).update(storedText, 'utf8').digest();
}
