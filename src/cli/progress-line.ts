import type { Writable } from 'node:stream';

/**
 * A progress line redrawn in place on a terminal at most every 200 ms; silent when the stream
 * is not a terminal, so logs and pipes stay clean.
 */
export class ProgressLine {
  private lastDrawn = 0;
  private drawn = false;

  constructor(private readonly stream: Writable & { isTTY?: boolean }) {}

  update(text: string): void {
    if (!this.stream.isTTY) return;
    const now = Date.now();
    if (now - this.lastDrawn < 200) return;
    this.lastDrawn = now;
    this.drawn = true;
    this.stream.write(`\r\x1b[2K${text}`);
  }

  /** Clears the line before the final report. */
  done(): void {
    if (this.drawn) this.stream.write('\r\x1b[2K');
    this.drawn = false;
  }
}
