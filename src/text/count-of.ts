/**
 * A count with its noun in the right number, for every line os-audit prints: `1 event`,
 * `2 events`, `0 events`; `plural` for nouns that take more than an `s`.
 *
 * @example
 * ```ts
 * countOf(1, 'session'); // '1 session'
 * countOf(3, 'entry', 'entries'); // '3 entries'
 * ```
 */
export function countOf(count: number, noun: string, plural = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : plural}`;
}
