import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { shortestFailingPrefix } from '../../src/projector/stop-failing-session.js';

describe('shortestFailingPrefix', () => {
  it('finds the first item from which every prefix fails, in about log2 trials', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 5000 }).chain((length) => fc.tuple(fc.constant(length), fc.integer({ min: 1, max: length }))), async ([length, culprit]) => {
        let trials = 0;
        const found = await shortestFailingPrefix(length, 'all', async (count) => {
          trials += 1;
          return count >= culprit ? `first ${count}` : undefined;
        });
        expect(found.length).toBe(culprit);
        expect(found.failure).toBe(culprit === length ? 'all' : `first ${culprit}`);
        expect(trials).toBeLessThanOrEqual(Math.ceil(Math.log2(length)) + 1);
      }),
    );
  });
});
