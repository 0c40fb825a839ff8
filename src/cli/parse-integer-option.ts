import { InvalidArgumentError } from 'commander';

/**
 * A commander option parser for whole numbers from `min` up.
 *
 * @example
 * ```ts
 * command.option('--from-seq <seq>', 'start at this seq', integerOption(0), 0);
 * ```
 */
export function integerOption(min: number): (text: string) => number {
  return (text) => {
    const value = Number(text);
    if (text.trim() === '' || !Number.isSafeInteger(value) || value < min) {
      throw new InvalidArgumentError(`expected a whole number from ${min}`);
    }
    return value;
  };
}
