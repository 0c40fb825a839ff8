/**
 * The levels and formats of the daemon's logs, which `os-audit project --help` lists; apart
 * from `createLogger` so that the CLI's registration loads no pino.
 *
 * @example
 * ```ts
 * const level: LogLevel = LOG_LEVELS.includes(text as LogLevel) ? (text as LogLevel) : 'info';
 * ```
 */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];
