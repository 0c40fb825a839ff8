import { describe, expect, it } from 'vitest';
import { pollStatus } from '../../src/observability/status-poller.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('pollStatus', () => {
  it('reads one at a time, reports failures, and stops after the read in flight', async () => {
    let inFlight = 0;
    let mostInFlight = 0;
    let reads = 0;
    const results: string[] = [];
    const stop = pollStatus(
      async () => {
        reads += 1;
        inFlight += 1;
        mostInFlight = Math.max(mostInFlight, inFlight);
        await sleep(30); // slower than the interval
        inFlight -= 1;
        if (reads === 2) throw new Error('database unreachable');
        return reads;
      },
      5,
      (value, error) => results.push(error ? `error: ${error.message}` : `read ${value}`),
    );
    while (reads < 3) await sleep(5);
    await stop();
    const after = reads;
    expect(inFlight).toBe(0);
    await sleep(50);
    expect(reads).toBe(after);
    expect(mostInFlight).toBe(1);
    expect(results.slice(0, 2)).toEqual(['read 1', 'error: database unreachable']);
    expect(results).toHaveLength(after);
  });
});
