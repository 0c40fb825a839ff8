import { describe, expect, it } from 'vitest';
import { diffJson } from '../../src/json/diff-json.js';

describe('diffJson', () => {
  it('names each differing path with both values, whatever the key order', () => {
    expect(diffJson({ a: 1, b: [1, 2], c: { d: 'x' } }, { c: { d: 'x' }, b: [1, 2], a: 1 })).toEqual([]);
    expect(diffJson({ a: 1, b: [1, 2], c: { d: 'x' } }, { a: 2, b: [1], c: { e: 18446744073709551615n } }, ['sql', 'log'])).toEqual([
      'a: sql 1, log 2',
      'b: sql has 2 entries, log has 1',
      'c.d: sql "x", log nothing',
      'c.e: sql nothing, log 18446744073709551615',
    ]);
    expect(diffJson([], {}, ['sql', 'log'])).toEqual(['$: sql [], log {}']);
  });
});
