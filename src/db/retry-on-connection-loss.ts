import { sleep } from '../time/sleep.js';
import { ConnectionLostError, isConnectionLoss } from './connection-loss.js';

/** How long and how often work is tried again after the connection to PostgreSQL was lost. */
export interface ConnectionRetry {
  /** Give up once this long has passed since the first failure; default 60000 ms. `Infinity`: never. */
  retryForMs?: number;
  /** First wait; doubled after each failure up to `maxDelayMs`. Default 100 ms. */
  initialDelayMs?: number;
  /** Longest wait between two attempts; default 2000 ms. */
  maxDelayMs?: number;
  /** Told of each failure before the wait that follows it, e.g. to log it once. */
  onRetry?: (error: Error, attempt: number, delayMs: number) => void;
  /** Stops waiting: the last error is thrown. */
  signal?: AbortSignal;
}

/** The retry every os-audit writer and reader uses unless told otherwise. */
export const DEFAULT_CONNECTION_RETRY: Required<Omit<ConnectionRetry, 'onRetry' | 'signal'>> = {
  retryForMs: 60_000,
  initialDelayMs: 100,
  maxDelayMs: 2000,
};

/**
 * Runs `work`, and runs it again with backoff while it fails because the connection to
 * PostgreSQL was lost ({@link isConnectionLoss}); any other error is thrown at once. `work`
 * must be safe to run again after such a failure: a read, or a write whose outcome it checks.
 * When the retry time is over, a {@link ConnectionLostError} says so, the last error as its
 * cause.
 *
 * @example
 * ```ts
 * const heads = await retryOnConnectionLoss(() => db.selectFrom('sessions').selectAll().execute(), { retryForMs: 30_000 });
 * ```
 */
export async function retryOnConnectionLoss<T>(work: (attempt: number) => Promise<T>, retry: ConnectionRetry = {}): Promise<T> {
  const { retryForMs, initialDelayMs, maxDelayMs } = { ...DEFAULT_CONNECTION_RETRY, ...definedOnly(retry) };
  let firstFailureAt: number | undefined;
  let delayMs = initialDelayMs;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await work(attempt);
    } catch (error) {
      if (!isConnectionLoss(error)) throw error;
      firstFailureAt ??= Date.now();
      const elapsedMs = Date.now() - firstFailureAt;
      if (elapsedMs >= retryForMs || retry.signal?.aborted) throw givenUp(error as Error, elapsedMs);
      const wait = Math.min(delayMs, retryForMs - elapsedMs) * (0.75 + Math.random() * 0.5);
      retry.onRetry?.(error as Error, attempt, Math.round(wait));
      await sleep(wait, retry.signal);
      delayMs = Math.min(delayMs * 2, maxDelayMs);
    }
  }
}

function givenUp(error: Error, elapsedMs: number): Error {
  if (error instanceof ConnectionLostError) return error;
  const stored = (error as { stored?: unknown }).stored;
  return new ConnectionLostError(
    `the connection to PostgreSQL was lost and could not be made again in ${Math.round(elapsedMs / 1000)} s: ${error.message}`,
    stored === false || stored === 'unknown' ? stored : undefined,
    { cause: error },
  );
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== undefined)) as Partial<T>;
}
