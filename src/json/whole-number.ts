/**
 * The whole number `text` writes in decimal digits (a leading `-` allowed), or undefined:
 * `Number` would also take `1e3`, `1.0`, `0x10` and white space, which no help promises.
 *
 * @example
 * ```ts
 * parseWholeNumber('1000'); // 1000
 * parseWholeNumber('1e3'); // undefined
 * ```
 */
export function parseWholeNumber(text: string): number | undefined {
  if (!/^-?\d+$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : undefined;
}
