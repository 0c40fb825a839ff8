/**
 * A `bigint` column's value as a number, however the pool read it: `openDatabase`'s type parser
 * makes it one, pg's default (a Kysely on a pool of one's own) leaves it a string. Seqs,
 * positions and counts stay far below 2^53; a larger one is an error, never a rounded value.
 *
 * @example
 * ```ts
 * exactInteger('42'); // 42
 * exactInteger(42); // 42
 * exactInteger('9007199254740993'); // throws RangeError
 * ```
 */
export function exactInteger(value: number | string): number {
  if (typeof value === 'number') return value;
  const number = Number(value);
  if (!Number.isSafeInteger(number)) throw new RangeError(`bigint value ${value} is beyond 2^53 and cannot be read as a number`);
  return number;
}
