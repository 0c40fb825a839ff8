import { isJsonObject, type JsonValue } from './json-value.js';
import { stringifyJson } from './stringify-json.js';

/**
 * Where two JSON values differ, one line per difference, naming the path and both values:
 * `signals[2].queue_depth: sql 1, log 3`. Empty when they are equal (key order aside).
 *
 * @example
 * ```ts
 * diffJson({ tool_gated_count: 2, signals: [] }, { tool_gated_count: 3, signals: [] }, ['sql', 'log']);
 * // ['tool_gated_count: sql 2, log 3']
 * ```
 */
export function diffJson(left: JsonValue, right: JsonValue, names: readonly [string, string] = ['left', 'right']): string[] {
  const differences: string[] = [];
  diffValue('', left, right, names, differences);
  return differences;
}

function diffValue(path: string, a: JsonValue | undefined, b: JsonValue | undefined, names: readonly [string, string], out: string[]): void {
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) out.push(`${path || '$'}: ${names[0]} has ${a.length} entries, ${names[1]} has ${b.length}`);
    for (let i = 0; i < Math.min(a.length, b.length); i++) diffValue(`${path}[${i}]`, a[i], b[i], names, out);
    return;
  }
  if (a !== undefined && b !== undefined && isJsonObject(a) && isJsonObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const key of keys) diffValue(path === '' ? key : `${path}.${key}`, a[key], b[key], names, out);
    return;
  }
  const [textA, textB] = [a === undefined ? 'nothing' : stringifyJson(a), b === undefined ? 'nothing' : stringifyJson(b)];
  if (textA !== textB) out.push(`${path || '$'}: ${names[0]} ${textA}, ${names[1]} ${textB}`);
}
