/**
 * Another writer moved the checkpoint first: this batch was rolled back and must be re-read.
 *
 * @example
 * ```ts
 * try {
 *   await projector.step();
 * } catch (error) {
 *   if (!(error instanceof CheckpointMovedError)) throw error;
 *   // Nothing of the batch was kept, and the projector stood by: lead again, then step again.
 * }
 * ```
 */
export class CheckpointMovedError extends Error {
  constructor(projection: string) {
    super(`projection ${projection}: the checkpoint moved under this batch (another writer, or the lease was lost); rolled back`);
    this.name = 'CheckpointMovedError';
  }
}
