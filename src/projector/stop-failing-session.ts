import { type BatchConnection, undone } from './batch-connection.js';

/**
 * A fault of the data, or of the fold on it: SQLSTATE classes 22 (data exception), 23
 * (integrity constraint violation) and 54 (program limit exceeded: a value too large for an
 * index, say).
 */
export function isDataError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && ['22', '23', '54'].includes(code.slice(0, 2));
}

/** A trial batch, undone: its data error, or undefined when it folds. Any other error is thrown. */
export function trialFailure(connection: BatchConnection, fold: () => Promise<unknown>): Promise<unknown> {
  return undone(connection, async () => {
    try {
      await fold();
      return undefined;
    } catch (failure) {
      if (!isDataError(failure)) throw failure;
      return failure;
    }
  });
}

/**
 * The shortest failing prefix of a batch of `length` items (events of a window, or sessions),
 * found by halving: a batch of all of them failed with `failure`. `failureOf(n)` tries the
 * first `n` items. The last item of the prefix is the one to stop.
 */
export async function shortestFailingPrefix(
  length: number,
  failure: unknown,
  failureOf: (count: number) => Promise<unknown>,
): Promise<{ length: number; failure: unknown }> {
  let [ok, failing, found] = [0, length, failure];
  while (failing - ok > 1) {
    const middle = Math.floor((ok + failing) / 2);
    const trial = await failureOf(middle);
    if (trial === undefined) ok = middle;
    else [failing, found] = [middle, trial];
  }
  return { length: failing, failure: found };
}

/** The problem a session stopped for its fold's failure carries (reason `failed`). */
export function failedFoldProblem(failure: unknown): string {
  return `the projection's SQL failed on the events of this session: ${(failure as Error).message}`;
}
