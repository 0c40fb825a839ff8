/** Stops a {@link pollStatus} loop; resolves once a read in flight has finished. */
export type StopPolling = () => Promise<void>;

/**
 * Reads something now and again, one read at a time: the next read starts `intervalMs` after
 * the previous one ended, so a slow database gets fewer reads, never a pile of them.
 *
 * @example
 * ```ts
 * const stop = pollStatus(() => readProjectionStatus(db, projection.name), 1000, (status, error) => {
 *   if (status) metrics.recordStatus(status);
 * });
 * await stop();
 * ```
 */
export function pollStatus<T>(read: () => Promise<T>, intervalMs: number, onResult: (value: T | undefined, error?: Error) => void): StopPolling {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;
  const tick = () => {
    inFlight = read().then(
      (value) => onResult(value),
      (error: unknown) => onResult(undefined, error instanceof Error ? error : new Error(String(error))),
    );
    void inFlight.then(() => {
      if (!stopped) timer = setTimeout(tick, intervalMs);
    });
  };
  tick();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await inFlight;
  };
}
