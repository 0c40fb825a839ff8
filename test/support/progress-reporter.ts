import { type TestCase, VerboseReporter } from 'vitest/node';

/** After this long with no test finishing, the tests still running are named. */
const QUIET_MS = 60_000;

/**
 * `npm test`'s reporter: vitest's verbose one, which prints each test as it ends (the default
 * prints a file only when the whole file ends). After a minute with nothing new, it names the
 * tests still running and for how long, so that a long test is never silent.
 */
export default class ProgressReporter extends VerboseReporter {
  private readonly started = new Map<TestCase, number>();
  private lastOutput = Date.now();
  private timer: NodeJS.Timeout | undefined;

  override onTestRunStart(...args: Parameters<VerboseReporter['onTestRunStart']>): void {
    super.onTestRunStart(...args);
    this.timer = setInterval(() => this.sayWhatRuns(), QUIET_MS / 4);
    this.timer.unref();
  }

  override onTestCaseReady(test: TestCase): void {
    super.onTestCaseReady(test);
    this.started.set(test, Date.now());
  }

  override onTestCaseResult(test: TestCase): void {
    super.onTestCaseResult(test);
    this.started.delete(test);
    this.lastOutput = Date.now();
  }

  override onTestRunEnd(...args: Parameters<VerboseReporter['onTestRunEnd']>): ReturnType<VerboseReporter['onTestRunEnd']> {
    clearInterval(this.timer);
    return super.onTestRunEnd(...args);
  }

  private sayWhatRuns(): void {
    const now = Date.now();
    if (now - this.lastOutput < QUIET_MS) return;
    const long = [...this.started].filter(([, since]) => now - since >= QUIET_MS);
    if (long.length === 0) return;
    this.lastOutput = now;
    for (const [test, since] of long) {
      this.log(`   … still running after ${Math.round((now - since) / 1000)} s: ${test.module.moduleId.replace(`${this.ctx.config.root}/`, '')} > ${test.fullName}`);
    }
  }
}
