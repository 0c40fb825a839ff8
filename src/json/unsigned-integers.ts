/** The largest u32: 2^32 - 1. */
export const U32_MAX = 4294967295;
/** The largest u64: 2^64 - 1. */
export const U64_MAX = 18446744073709551615n;

/**
 * Whether `value` is a u32 as the runtime's Rust core reads one: an integer in 0..4294967295,
 * and not `-0` (which it reads as a float).
 *
 * @example
 * ```ts
 * isU32(3);          // true
 * isU32(4294967296); // false
 * isU32(-0);         // false
 * isU32(new JsonFloat('3.0')); // false: written with a fraction
 * ```
 */
export function isU32(value: unknown): value is number {
  // `value !== 0` first: Object.is runs only for a zero.
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= U32_MAX && (value !== 0 || !Object.is(value, -0));
}

/**
 * Whether `value` is a u64 as `parseJson` gives one: a safe integer from 0 (not `-0`), or a
 * `bigint` up to 2^64 - 1 (an integer above 2^53 that is a `number` has lost its precision).
 *
 * @example
 * ```ts
 * isU64(3);                      // true
 * isU64(18446744073709551615n);  // true
 * isU64(2 ** 60);                // false: not exact
 * ```
 */
export function isU64(value: unknown): value is number | bigint {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 && (value !== 0 || !Object.is(value, -0));
  return typeof value === 'bigint' && value >= 0n && value <= U64_MAX;
}
