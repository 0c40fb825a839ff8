import { describe, expect, it } from 'vitest';
import { describeJsonValue, quoteString } from '../../src/json/describe-json-value.js';
import { JsonFloat } from '../../src/json/json-value.js';

describe('describeJsonValue', () => {
  it.each([
    [-1, '-1'],
    [18446744073709551616n, '18446744073709551616'],
    [1.5, 'the number 1.5'],
    [-0, '-0 (a negative zero, which the runtime reads as a float)'],
    [new JsonFloat('1.50'), 'the float 1.50'],
    ['12', 'the string "12"'],
    [true, 'the boolean true'],
    [null, 'null'],
    [undefined, 'nothing'],
    [[], 'an empty array'],
    [[1], 'an array of 1 item'],
    [[1, 2], 'an array of 2 items'],
    [{ a: 1 }, 'an object'],
    [() => 1, 'a function'],
    [Symbol('s'), 'a symbol'],
  ])('describes %o as %s', (value, expected) => {
    expect(describeJsonValue(value)).toBe(expected);
  });

  it('quotes a string as JSON, cut after 60 characters', () => {
    expect(quoteString('a\u0000')).toBe('"a\\u0000"');
    expect(quoteString('x'.repeat(61))).toBe(`"${'x'.repeat(60)}"…`);
  });
});
