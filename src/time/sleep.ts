/**
 * Resolves after `ms`, or at once when `signal` aborts (never rejects): a wait that a
 * shutdown cuts short.
 *
 * @example
 * ```ts
 * await sleep(1000, stop.signal);
 * if (stop.signal.aborted) return;
 * ```
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
