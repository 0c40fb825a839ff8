import { PassThrough } from 'node:stream';

/**
 * A stream that records what is written to it: a terminal of `columns` columns when `tty`
 * (what progress lines draw on), else a pipe.
 *
 * @example
 * ```ts
 * const { stream, written } = fakeStream(true);
 * new ProgressLine(stream, 'verifying').update(1, 2, '1/2 sessions');
 * ```
 */
export function fakeStream(tty: boolean, columns = 100) {
  const stream = Object.assign(new PassThrough(), tty ? { isTTY: true, columns } : {});
  let written = '';
  stream.on('data', (chunk: Buffer) => (written += chunk.toString()));
  return { stream, written: () => written };
}

/** What the terminal shows: the text without its control sequences. */
export const visibleText = (text: string) => text.replace(/\x1b\[[0-9;?]*[a-zA-Z]|\x1b[78]/g, '');
