import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as entry from '../../src/index.js';

/** docs/library.md names every value the package's entry exports, so that the page stays whole. */
describe('docs/library.md', () => {
  it('names every value exported by the entry', () => {
    const page = readFileSync(new URL('../../docs/library.md', import.meta.url), 'utf8');
    const named = new Set([...page.matchAll(/`([A-Za-z_][A-Za-z0-9_]*)`/g)].map((match) => match[1]));
    expect(Object.keys(entry).filter((name) => !named.has(name))).toEqual([]);
  });
});
