/**
 * An append was made against a stale view of a session: the log did not end where the writer
 * expected. Nothing of the batch was stored; re-read the session and retry.
 *
 * Seqs are those of the last stored event; -1 stands for a session with no events.
 */
export class ConcurrencyError extends Error {
  constructor(
    readonly sessionId: string,
    readonly expectedSeq: number,
    readonly actualSeq: number,
  ) {
    super(
      `session ${JSON.stringify(sessionId)}: expected its log to end at seq ${expectedSeq}, ` +
        `but it ends at seq ${actualSeq}; nothing was appended`,
    );
    this.name = 'ConcurrencyError';
  }
}
