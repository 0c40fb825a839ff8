import { afterEach } from 'vitest';
import { type DaemonOptions, type DaemonProcess, startDaemon } from './daemon-process.js';

/**
 * Starts daemons for the calling test file and SIGKILLs those still running after each test,
 * so that no test leaks a process.
 */
export function useDaemonProcesses(): (databaseUrl: string, options: DaemonOptions) => DaemonProcess {
  const started: DaemonProcess[] = [];
  afterEach(async () => {
    const running = started.splice(0).filter((daemon) => daemon.isRunning());
    for (const daemon of running) daemon.child.kill('SIGKILL');
    await Promise.all(running.map((daemon) => daemon.exited));
  });
  return (databaseUrl, options) => {
    const daemon = startDaemon(databaseUrl, options);
    started.push(daemon);
    return daemon;
  };
}
