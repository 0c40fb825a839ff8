import { describe, expect, it } from 'vitest';
import { ProgressLine } from '../../src/cli/progress-line.js';
import { fakeStream, visibleText } from '../support/fake-terminal.js';

describe('ProgressLine', () => {
  it('writes nothing when the stream is not a terminal', async () => {
    const { stream, written } = fakeStream(false);
    const progress = new ProgressLine(stream, 'verifying');
    expect(progress.visible).toBe(false);
    for (let checked = 1; checked <= 50; checked += 1) progress.update(checked, 50, `${checked}/50 sessions`);
    progress.done();
    await new Promise((resolve) => setImmediate(resolve));
    expect(written()).toBe('');
  });

  it('draws a bar with percentage, detail and ETA on a terminal, and clears it when done', async () => {
    const { stream, written } = fakeStream(true);
    const progress = new ProgressLine(stream, 'verifying');
    expect(progress.visible).toBe(true);
    progress.update(0, 40, '0/40 sessions');
    progress.update(10, 40, '10/40 sessions');
    progress.done();
    await new Promise((resolve) => setImmediate(resolve));
    const text = visibleText(written());
    expect(text).toContain(`verifying ${'░'.repeat(30)} 0% | 0/40 sessions | ETA`);
    // The last state is drawn before the bar is cleared.
    expect(text).toContain(`verifying ${'█'.repeat(8)}${'░'.repeat(22)} 25% | 10/40 sessions | ETA`);
    expect(written()).toMatch(/\x1b\[2K$/);
  });

  it('shows the detail alone while the total is unknown', async () => {
    const { stream, written } = fakeStream(true);
    const progress = new ProgressLine(stream, 'importing');
    progress.update(2048, undefined, '120 events (120 new), 0.0 MiB');
    progress.done();
    await new Promise((resolve) => setImmediate(resolve));
    expect(visibleText(written())).toContain('importing: 120 events (120 new), 0.0 MiB');
    expect(written()).not.toContain('█');
    expect(written()).not.toContain('░');
  });
});
