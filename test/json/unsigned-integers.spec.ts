import { describe, expect, it } from 'vitest';
import { JsonFloat } from '../../src/json/json-value.js';
import { isU32, isU64 } from '../../src/json/unsigned-integers.js';

describe('isU32 and isU64', () => {
  it('take integers in their range, as the Rust core reads them', () => {
    for (const value of [0, 1, 4294967295]) expect(isU32(value), String(value)).toBe(true);
    for (const value of [-0, -1, 4294967296, 1.5, 2n, new JsonFloat('3.0'), '3', null, undefined]) expect(isU32(value), String(value)).toBe(false);
    for (const value of [0, Number.MAX_SAFE_INTEGER, 0n, 18446744073709551615n]) expect(isU64(value), String(value)).toBe(true);
    for (const value of [-0, -1, 2 ** 60, -1n, 18446744073709551616n, 1.5, new JsonFloat('3.0'), '3']) expect(isU64(value), String(value)).toBe(false);
  });
});
