import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';

/**
 * How much of the machine other work took while the benchmark ran: every figure here is skewed
 * by it on a 2-core machine. Every 500 ms it sums the CPU time each process used
 * (/proc/<pid>/stat) over the processes that are not the benchmark's own. Its own are this
 * process and its children (the projector), and the PostgreSQL server's processes except the
 * backends of databases the benchmark did not create. Kernel threads (I/O, interrupts) are left
 * out. A process that
 * lives less than a sample is missed, so this is a lower bound.
 */
export class OtherLoadMonitor {
  private readonly databases = new Set<string>();
  private readonly lastTicks = new Map<number, number>();
  private timer: NodeJS.Timeout | undefined;
  private otherTicks = 0;
  private markTicks = 0;
  private markAt = performance.now();
  private readonly startedAt = performance.now();
  private readonly ticksPerSecond = 100;
  private readonly cores = os.cpus().length;

  /** Counts the backends of this database as the benchmark's own. */
  addDatabase(name: string): void {
    this.databases.add(name);
  }

  start(): void {
    if (!this.available()) return;
    this.sampleProcesses(true);
    this.timer = setInterval(() => this.sample(), 500);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The share of the machine (0–1) other work took since the last call (or the start). */
  mark(): number | null {
    if (!this.available()) return null;
    this.sample();
    const now = performance.now();
    const seconds = (now - this.markAt) / 1000;
    const share = seconds <= 0 ? 0 : (this.otherTicks - this.markTicks) / this.ticksPerSecond / seconds / this.cores;
    this.markTicks = this.otherTicks;
    this.markAt = now;
    return Math.max(0, Math.min(1, share));
  }

  /** The share of the machine (0–1) other work took since the start. */
  total(): number | null {
    if (!this.available()) return null;
    this.sample();
    const seconds = (performance.now() - this.startedAt) / 1000;
    return seconds <= 0 ? 0 : Math.max(0, Math.min(1, this.otherTicks / this.ticksPerSecond / seconds / this.cores));
  }

  private available(): boolean {
    try {
      readFileSync('/proc/self/stat', 'utf8');
      return true;
    } catch {
      return false;
    }
  }

  private sample(): void {
    try {
      this.otherTicks += this.sampleProcesses(false);
    } catch {
      // /proc went away under us: skip this sample
    }
  }

  /** CPU ticks other work's processes used since the last sample. */
  private sampleProcesses(first: boolean): number {
    const stats = new Map<number, { ppid: number; ticks: number }>();
    for (const entry of readdirSync('/proc')) {
      const pid = Number(entry);
      if (!Number.isInteger(pid)) continue;
      try {
        const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
        stats.set(pid, { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) });
      } catch {
        // exited
      }
    }
    let other = 0;
    for (const [pid, { ppid, ticks }] of stats) {
      if (pid === 2 || ppid === 2) continue; // kernel threads
      const previous = this.lastTicks.get(pid);
      this.lastTicks.set(pid, ticks);
      if (first || this.isOwn(pid, stats)) continue;
      other += previous === undefined ? ticks : ticks - previous;
    }
    for (const pid of this.lastTicks.keys()) if (!stats.has(pid)) this.lastTicks.delete(pid);
    return other;
  }

  private isOwn(pid: number, stats: Map<number, { ppid: number }>): boolean {
    for (let p = pid, depth = 0; p > 1 && depth < 20; p = stats.get(p)?.ppid ?? 0, depth++) {
      if (p === process.pid) return true;
    }
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    } catch {
      return false;
    }
    if (/^\S*\/bin\/postgres /.test(cmdline)) return true; // the postmaster
    if (!cmdline.startsWith('postgres')) return false;
    // A backend names its database in its title; the server's own processes name none of them.
    const backend = cmdline.match(/^postgres: (?:\S+: )?\S+ (\S+) \S+\(\d+\)/);
    if (backend === null) return true;
    return this.databases.has(backend[1]!) || backend[1] === 'postgres';
  }
}

/** The run's monitor: measurements register the databases they create with it. */
export const otherLoad = new OtherLoadMonitor();
