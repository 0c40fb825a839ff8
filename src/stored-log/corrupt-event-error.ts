import { describeOrigin } from '../events/invalid-event-error.js';

/**
 * A stored event that is not an event: its stored text (`payload_text`, else `payload`) is not
 * JSON, not a JSON object, or not of its row's `kind`. The store never writes one; a write
 * around it can (by hand, or a hostile writer). The message reads
 * `session "s", seq 3: the stored event is not JSON: unexpected character 'o' at column 2`.
 */
export class CorruptEventError extends Error {
  constructor(
    readonly sessionId: string,
    readonly seq: number,
    /** What is wrong with the stored event, without its session and seq. */
    readonly problem: string,
    options?: ErrorOptions,
  ) {
    super(`${describeOrigin({ sessionId, seq })}: ${problem}`, options);
    this.name = 'CorruptEventError';
  }
}
