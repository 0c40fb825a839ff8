import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * Where a system command is: on PATH, else in /usr/sbin (where Debian puts daemons, outside a
 * non-root PATH); undefined when it is not installed.
 *
 * @example
 * ```ts
 * const promtool = findCommand('promtool'); // '/usr/bin/promtool' with Debian's prometheus package
 * ```
 */
export function findCommand(name: string): string | undefined {
  try {
    const found = execFileSync('sh', ['-c', 'command -v "$1"', 'sh', name], { encoding: 'utf8' }).trim();
    if (found) return found;
  } catch {
    // Not on PATH: `command -v` exits 1.
  }
  const sbin = path.join('/usr/sbin', name);
  return existsSync(sbin) ? sbin : undefined;
}
