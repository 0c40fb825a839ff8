import { InvalidArgumentError } from 'commander';
import { parseWholeNumber } from '../json/whole-number.js';

/**
 * A commander option parser for whole numbers from `min` up, in decimal digits (no `1e3`).
 *
 * @example
 * ```ts
 * command.option('--from-seq <seq>', 'start at this seq', integerOption(0), 0);
 * ```
 */
export function integerOption(min: number): (text: string) => number {
  return (text) => {
    const value = parseWholeNumber(text);
    if (value === undefined || value < min) {
      throw new InvalidArgumentError(`expected a whole number from ${min}`);
    }
    return value;
  };
}
