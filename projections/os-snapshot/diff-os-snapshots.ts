import type { OsSnapshot } from './os-snapshot.js';
import { canonicalOsSnapshot, OS_SNAPSHOT_KEYS } from './serialize-os-snapshot.js';

/**
 * Where two snapshots differ, one line per difference, naming the field and both values:
 * `signals[2].queue_depth: sql 1, log 3`. Empty when they are equal.
 *
 * @example
 * ```ts
 * diffOsSnapshots(sqlSnapshot, foldedSnapshot, ['sql', 'log']);
 * // ['tool_gated_count: sql 2, log 3']
 * ```
 */
export function diffOsSnapshots(left: OsSnapshot, right: OsSnapshot, names: readonly [string, string] = ['left', 'right']): string[] {
  const a = canonicalOsSnapshot(left) as unknown as Record<string, unknown>;
  const b = canonicalOsSnapshot(right) as unknown as Record<string, unknown>;
  const differences: string[] = [];
  for (const key of OS_SNAPSHOT_KEYS) diffValue(key, a[key], b[key], names, differences);
  return differences;
}

function diffValue(path: string, a: unknown, b: unknown, names: readonly [string, string], out: string[]): void {
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) {
      out.push(`${path}: ${names[0]} has ${a.length} entries, ${names[1]} has ${b.length}`);
    }
    for (let i = 0; i < Math.min(a.length, b.length); i++) diffValue(`${path}[${i}]`, a[i], b[i], names, out);
    return;
  }
  if (isRecord(a) && isRecord(b)) {
    for (const key of Object.keys(a)) diffValue(`${path}.${key}`, a[key], b[key], names, out);
    return;
  }
  if (JSON.stringify(a) !== JSON.stringify(b)) {
    out.push(`${path}: ${names[0]} ${JSON.stringify(a)}, ${names[1]} ${JSON.stringify(b)}`);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
