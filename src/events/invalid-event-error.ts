import type { EventValidationError } from './validate-event.js';
import { JsonParseError } from '../json/parse-json.js';

/** Where a rejected event came from, for the error message. */
export interface EventOrigin {
  sessionId?: string;
  /** The seq the event has or would have had. */
  seq?: number;
  /** Position of the event in the batch handed to `append`, from 0. */
  index?: number;
  file?: string;
  line?: number;
}

/**
 * An event of a batch broke the contract; nothing of the batch was stored. The message reads
 * `file:line: session "s", seq 3: field "turn": expected a u32 …`.
 */
export class InvalidEventError extends Error {
  constructor(
    readonly origin: EventOrigin,
    readonly reason: string,
    options?: ErrorOptions,
  ) {
    const where = describeOrigin(origin);
    super(where ? `${where}: ${reason}` : reason, options);
    this.name = 'InvalidEventError';
  }

  static fromValidation(origin: EventOrigin, error: EventValidationError): InvalidEventError {
    return new InvalidEventError(origin, error.message, { cause: error });
  }

  /** Text that `parseJson` refused; too deep a text is valid JSON, so it is not called invalid. */
  static fromJsonParse(origin: EventOrigin, error: JsonParseError): InvalidEventError {
    const reason = error.code === 'too_deep' ? error.message : `invalid JSON: ${error.message}`;
    return new InvalidEventError(origin, reason, { cause: error });
  }

  /**
   * The value of `parse`, or the {@link fromJsonParse} error at `origin` when it refuses the
   * text (`origin` may take the refusal, for its line).
   *
   * @example
   * ```ts
   * const value = InvalidEventError.parsing(() => parseJson(line), { file: 'a.jsonl', line: 3 });
   * ```
   */
  static parsing<T>(parse: () => T, origin: EventOrigin | ((error: JsonParseError) => EventOrigin)): T {
    try {
      return parse();
    } catch (error) {
      if (!(error instanceof JsonParseError)) throw error;
      throw InvalidEventError.fromJsonParse(typeof origin === 'function' ? origin(error) : origin, error);
    }
  }
}

export function describeOrigin(origin: EventOrigin): string {
  const where = origin.file === undefined ? '' : `${origin.file}${origin.line === undefined ? '' : `:${origin.line}`}: `;
  const parts: string[] = [];
  if (origin.sessionId !== undefined) parts.push(`session ${JSON.stringify(origin.sessionId)}`);
  if (origin.seq !== undefined) parts.push(`seq ${origin.seq}`);
  if (origin.index !== undefined) parts.push(`event #${origin.index}`);
  return (where + parts.join(', ')).replace(/: $/, '');
}
