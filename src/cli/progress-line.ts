import { createRequire } from 'node:module';
import { Writable } from 'node:stream';
import type { Options, Params, SingleBar } from 'cli-progress';

const require = createRequire(import.meta.url);

interface Payload {
  detail: string;
  /** Whether the total is known: a bar, or the detail alone. */
  bar: boolean;
}

/**
 * A progress bar redrawn in place on a terminal (at most ten times a second): `label`, the bar
 * with its percentage and ETA when the total is known, and a detail. Silent when the stream is
 * not a terminal, so that logs and pipes stay clean. Call {@link done} in a `finally`: the bar
 * redraws on a timer until then.
 *
 * @example
 * ```ts
 * const progress = new ProgressLine(io.stderr, 'verifying');
 * try {
 *   for (const [i, id] of ids.entries()) { await check(id); progress.update(i + 1, ids.length, `${i + 1}/${ids.length} sessions`); }
 * } finally {
 *   progress.done();
 * }
 * ```
 */
export class ProgressLine {
  private readonly bar: SingleBar;
  private started = false;

  constructor(
    private readonly stream: Writable & { isTTY?: boolean },
    label: string,
  ) {
    // Loaded by the commands that draw one, not by every start of the CLI.
    const { Format, SingleBar } = require('cli-progress') as typeof import('cli-progress');
    this.bar = new SingleBar({
      stream,
      clearOnComplete: true,
      barsize: 30,
      barCompleteChar: '█',
      barIncompleteChar: '░',
      format: (options: Options, params: Params, payload: Payload) =>
        payload.bar ? Format.Formatter({ ...options, format: `${label} {bar} {percentage}% | {detail} | ETA {eta_formatted}` }, params, payload) : `${label}: ${payload.detail}`,
    });
  }

  /** Whether anything is drawn: skip work done only for the bar (a count) when not. */
  get visible(): boolean {
    return this.stream.isTTY === true;
  }

  /** Shows `value` of `total` (unknown: no bar), with `detail`. */
  update(value: number, total: number | undefined, detail: string): void {
    if (!this.visible) return;
    const payload: Payload = { detail, bar: total !== undefined };
    if (!this.started) {
      this.started = true;
      this.bar.start(total ?? 1, value, payload);
      return;
    }
    if (total !== undefined && total !== this.bar.getTotal()) this.bar.setTotal(total);
    this.bar.update(value, payload);
  }

  /** Clears the bar before the final report. */
  done(): void {
    if (this.started) this.bar.stop();
    this.started = false;
  }
}

/**
 * `stream` for log lines written while a {@link ProgressLine} may be drawn on it. On a terminal
 * each write first erases the bar's line, so that a log line does not run on after the bar. The
 * bar draws itself again below at its next update. Not a terminal: `stream` itself.
 *
 * @example
 * ```ts
 * const log = createLogger({ level: 'info', stream: aboveProgress(io.stderr) });
 * ```
 */
export function aboveProgress(stream: Writable & { isTTY?: boolean }): Writable & { isTTY?: boolean } {
  if (stream.isTTY !== true) return stream;
  const lines = new Writable({
    write(chunk: Buffer, _encoding, done) {
      stream.write('\r\x1b[2K');
      stream.write(chunk, done);
    },
  });
  return Object.assign(lines, { isTTY: true });
}
