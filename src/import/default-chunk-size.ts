/**
 * Events a writer holds before it stores them: bounds memory, and the work of one write. Its own
 * file so that the CLI's `--help` shows it without loading the writer (and kysely).
 *
 * @example
 * ```ts
 * command.option('--chunk-size <events>', 'events per database write', integerOption(1), DEFAULT_CHUNK_SIZE);
 * ```
 */
export const DEFAULT_CHUNK_SIZE = 2000;
