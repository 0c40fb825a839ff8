import { describe, expect, it } from 'vitest';
import { exactInteger } from '../../src/db/exact-integer.js';

describe('exactInteger', () => {
  it('reads a bigint column as a number, whether the pool gave it as a number or as a string', () => {
    expect(exactInteger(42)).toBe(42);
    expect(exactInteger('42')).toBe(42);
    expect(exactInteger('-1')).toBe(-1);
    expect(exactInteger(String(Number.MAX_SAFE_INTEGER))).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('refuses a value a number cannot hold exactly, never rounding it', () => {
    expect(() => exactInteger('9007199254740993')).toThrow('bigint value 9007199254740993 is beyond 2^53 and cannot be read as a number');
  });
});
