/**
 * The projection met an event it must not fold past: a poison event (a stored row the fold
 * cannot read, written around the validator) or a hole in a session's log. The projection
 * stops here, loudly, rather than skip anything; `--skip-invalid` sets poison events aside.
 */
export class ProjectionHaltedError extends Error {
  constructor(
    message: string,
    readonly reason: 'poison' | 'jump',
    readonly detail: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ProjectionHaltedError';
  }
}

/** Another writer moved the checkpoint first: this batch was rolled back and must be re-read. */
export class CheckpointMovedError extends Error {
  constructor(projection: string) {
    super(`projection ${projection}: the checkpoint moved under this batch (another writer, or the lease was lost); rolled back`);
    this.name = 'CheckpointMovedError';
  }
}
