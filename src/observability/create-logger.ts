import { createRequire } from 'node:module';
import type { Writable } from 'node:stream';
import { type Logger, pino } from 'pino';
import type { LogFormat, LogLevel } from './log-settings.js';

const require = createRequire(import.meta.url);

export interface LoggerOptions {
  level: LogLevel;
  /** Default: `pretty` when `stream` is a terminal, else `json`. */
  format?: LogFormat;
  stream: Writable & { isTTY?: boolean };
}

/**
 * A pino logger writing to `stream` synchronously: JSON lines (`level` as a name, `time` in
 * ISO 8601), or pino-pretty's human lines (colored on a terminal), formatted in this thread.
 *
 * @example
 * ```ts
 * const log = createLogger({ level: 'info', stream: process.stderr });
 * log.info({ event: 'started', owner }, `os-audit projector ${owner} started`);
 * ```
 */
export function createLogger(options: LoggerOptions): Logger {
  const format = options.format ?? (options.stream.isTTY ? 'pretty' : 'json');
  const settings = {
    level: options.level,
    formatters: { level: (label: string) => ({ level: label }) },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  if (format === 'json') return pino(settings, options.stream);
  // Loaded only for a human reader: JSON logs start without it.
  const { prettyFactory } = require('pino-pretty') as typeof import('pino-pretty');
  // The message says it all (see ProjectorLog), but for which projection, one daemon running
  // them side by side: a line names it. The other fields are for machines.
  const pretty = prettyFactory({
    colorize: Boolean(options.stream.isTTY),
    translateTime: 'SYS:yyyy-mm-dd HH:MM:ss.l',
    ignore: 'pid,hostname',
    hideObject: true,
    messageFormat: (record, messageKey) => (typeof record.projection === 'string' ? `${record.projection}: ${String(record[messageKey])}` : String(record[messageKey])),
  });
  return pino(settings, { write: (line: string) => options.stream.write(pretty(line)) });
}
