import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { repoRoot } from './cli-process.js';

const writerEntry = fileURLToPath(new URL('./fault-writer.ts', import.meta.url));

/** What a writer process does (see `fault-writer.ts`). */
export interface WriterConfig {
  /** Names its units (`NAME-0`, `NAME-1`, ...) and its connection in `pg_stat_activity`. */
  name: string;
  url: string;
  /** Its journal file (JSONL; see `AppendJournal`). */
  journal: string;
  /** `event-store`: `EventStore.append` of a batch; `session-log`: `PostgresSessionLog.append` of one event. */
  api: 'event-store' | 'session-log';
  /** Sessions it appends to, one picked at random per append (shared with other writers or not). */
  sessions: readonly string[];
  /** Steady rate of appends. */
  appendsPerSecond: number;
  /** Fewest and most events per append (`event-store` only). */
  batch: readonly [number, number];
  /** Stop after this many appends; default: until SIGTERM. */
  units?: number;
}

/** A writer running as a child process. */
export interface WriterProcess {
  readonly config: WriterConfig;
  readonly child: ChildProcess;
  /** Resolves once its connection is open (rejects if it exits first). */
  readonly ready: Promise<void>;
  /** Resolves when it has exited (never rejects). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
  isRunning(): boolean;
  /** SIGTERM: it finishes the append under way and exits. */
  stop(): Promise<void>;
  /** SIGKILL, wherever it is. */
  kill(): Promise<void>;
}

/**
 * Starts a writer process (`node --import tsx fault-writer.ts`).
 *
 * @example
 * ```ts
 * const writer = startWriter({ name: 'w1', url, journal: '/tmp/w1.jsonl', api: 'event-store', sessions: ['s1', 's2'], appendsPerSecond: 50, batch: [1, 20] });
 * await writer.ready;
 * await writer.kill();
 * const units = readJournals([writer.config.journal]);
 * ```
 */
export function startWriter(config: WriterConfig): WriterProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', writerEntry, JSON.stringify(config)], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let running = true;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      running = false;
      resolve({ code, signal });
    });
  });
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (stdout.startsWith('ready\n')) resolve();
    });
    void exited.then((exit) => reject(new Error(`writer ${config.name} exited before it was ready (${JSON.stringify(exit)}): ${stderr}`)));
  });
  ready.catch(() => {}); // a caller that never awaits it must not crash the run
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const signal = async (name: NodeJS.Signals) => {
    if (running) child.kill(name);
    await exited;
  };
  return {
    config,
    child,
    ready,
    exited,
    stderr: () => stderr,
    isRunning: () => running,
    stop: () => signal('SIGTERM'),
    kill: () => signal('SIGKILL'),
  };
}
