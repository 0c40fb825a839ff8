import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compactJson, indentJson, nestsDeeperThan } from '../../src/json/json-text.js';

describe('compactJson', () => {
  it('removes the white space between tokens and nothing else', () => {
    expect(compactJson('{ "kind" : "a b",\t"n": [1e2 , -0.0],\r\n "s": "x\\" y" }')).toBe('{"kind":"a b","n":[1e2,-0.0],"s":"x\\" y"}');
    expect(compactJson('{"s":"\\\\","t":" "}')).toBe('{"s":"\\\\","t":" "}');
  });

  it('gives back text without white space as it is', () => {
    const text = '{"kind":"x","n":1.50}';
    expect(compactJson(text)).toBe(text);
  });

  it('equals JSON.stringify of JSON.parse on any JSON it is given (property)', () => {
    fc.assert(
      fc.property(fc.json(), (text) => {
        expect(compactJson(text)).toBe(JSON.stringify(JSON.parse(text)));
      }),
      { numRuns: 1000 },
    );
  });
});

describe('nestsDeeperThan', () => {
  it('counts arrays and objects, not brackets inside strings', () => {
    expect(nestsDeeperThan('[[1]]', 1)).toBe(true);
    expect(nestsDeeperThan('[[1]]', 2)).toBe(false);
    expect(nestsDeeperThan('{"a":"[[[[[[[[[["}', 1)).toBe(false);
    expect(nestsDeeperThan('{"a":"\\"[[[[[[[[["}', 1)).toBe(false);
  });

  it('finds the depth of deep text', () => {
    const deep = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
    expect(nestsDeeperThan(deep(512), 512)).toBe(false);
    expect(nestsDeeperThan(deep(513), 512)).toBe(true);
  });
});

describe('indentJson', () => {
  it('lays compact JSON out as JSON.stringify(value, null, indent) does, strings and numbers as written', () => {
    const value = { a: [1, { b: '}{,:"[]' }], e: {}, f: [], g: null, h: 'x\\"y' };
    const compact = JSON.stringify(value);
    expect(indentJson(compact, 2)).toBe(JSON.stringify(value, null, 2));
    expect(indentJson(compact, 4)).toBe(JSON.stringify(value, null, 4));
    expect(indentJson('[18446744073709551615,1e2,-0]', 2)).toBe('[\n  18446744073709551615,\n  1e2,\n  -0\n]');
    expect(indentJson('"a"', 2)).toBe('"a"');
  });
});
