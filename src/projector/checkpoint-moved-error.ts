/** Another writer moved the checkpoint first: this batch was rolled back and must be re-read. */
export class CheckpointMovedError extends Error {
  constructor(projection: string) {
    super(`projection ${projection}: the checkpoint moved under this batch (another writer, or the lease was lost); rolled back`);
    this.name = 'CheckpointMovedError';
  }
}
