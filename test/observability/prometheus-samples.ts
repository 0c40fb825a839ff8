/** One sample of a Prometheus text exposition: `name{labels} value`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (comments skipped). */
export function parseSamples(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The value of the one sample named `name` whose labels include `labels`; throws when there is not exactly one. */
export function sampleValue(text: string, name: string, labels: Record<string, string> = {}): number {
  const found = parseSamples(text).filter(
    (sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
  );
  if (found.length !== 1) throw new Error(`${found.length} samples of ${name}${JSON.stringify(labels)} in:\n${text}`);
  return found[0]!.value;
}
