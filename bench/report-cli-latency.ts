import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { ms } from './format.js';
import type { CliLatencyFigures } from './measure-cli-latency.js';
import type { FigureRow } from './bench-results.js';

/** The target of the CLI's latency: within this many times Node's start plus one query's round trip. */
export const CLI_LATENCY_TARGET = 1.5;

const HEADING = '## CLI latency';

/**
 * The CLI-latency lines of the table: `os-audit snapshot S` (median and p90) against
 * `node -e ''` plus one round trip, and the figures it is compared with.
 *
 * @example
 * ```ts
 * log(textTable(cliLatencyRows(await measureCliLatency(options, log))));
 * ```
 */
export function cliLatencyRows(f: CliLatencyFigures): FigureRow[] {
  const floor = f.node.medianMs + f.queryRoundTrip.medianMs;
  const none = { limit: '—', ratio: '—', target: '—', holds: null };
  return [
    {
      figure: `CLI latency: os-audit snapshot S (the bin, a stored snapshot), median of ${f.snapshot.runs}`,
      value: ms(f.snapshot.medianMs),
      limit: `node ${ms(f.node.medianMs)} + round trip ${ms(f.queryRoundTrip.medianMs)} = ${ms(floor)}`,
      ratio: `${f.ratio.toFixed(2)}×`,
      target: `≤ ${CLI_LATENCY_TARGET}× limit (${ms(CLI_LATENCY_TARGET * floor)})`,
      holds: f.ratio <= CLI_LATENCY_TARGET,
    },
    { figure: 'CLI latency: os-audit snapshot S, p90', value: ms(f.snapshot.p90Ms), ...none },
    { figure: "node -e '' (Node's start and exit), median; p90", value: `${ms(f.node.medianMs)}; ${ms(f.node.p90Ms)}`, ...none },
    {
      figure: `the snapshot's query from Node on an open connection (pg), median of ${f.queryRoundTrip.queries}; p90`,
      value: `${ms(f.queryRoundTrip.medianMs)}; ${ms(f.queryRoundTrip.p90Ms)}`,
      ...none,
    },
    { figure: 'os-audit --version (the bin), median', value: ms(f.version.medianMs), ...none },
    { figure: `npx os-audit snapshot S, median of ${f.npxSnapshot.runs}`, value: ms(f.npxSnapshot.medianMs), ...none },
  ];
}

/** When and how the CLI-latency figure was taken, for its section. */
export interface CliLatencyTaken {
  at: string;
  command: string;
  otherLoadPercent: number | null;
  loadAverage: number;
}

/**
 * The "CLI latency" section of BENCHMARKS.md: the figures, the load they were taken under, and
 * how they are taken.
 */
export function cliLatencyMarkdown(f: CliLatencyFigures, table: string, taken: CliLatencyTaken): string[] {
  return [
    HEADING,
    '',
    `Taken ${taken.at} with \`${taken.command}\`; load average (1 min) at the start ${taken.loadAverage.toFixed(1)}` +
      (taken.otherLoadPercent === null ? '.' : `, other work took ${taken.otherLoadPercent}% of the machine's CPU meanwhile.`),
    '',
    table,
    '',
    `How: a new migrated database holds one session (\`samples/${f.session}.jsonl\`, imported and projected with the CLI). ` +
      `Then, interleaved and after 5 warm-up runs each, ${f.snapshot.runs} runs of each of \`node -e ''\`, \`node ${f.bin} snapshot ${f.session}\` ` +
      "(the package's bin, as `npm link`, a global install or `node_modules/.bin` on PATH run it; `DATABASE_URL` set, so no embedded server) " +
      `and \`node ${f.bin} --version\`, each a real process timed from spawn to exit (the bin's code cache written by the warm-up runs, as by a user's first commands); then ${f.npxSnapshot.runs} runs of \`npx os-audit snapshot\`. ` +
      `The round trip: the query \`os-audit snapshot\` sends for a stored snapshot, from Node with pg on a connection already open, ${f.queryRoundTrip.queries} times after 100 warm-up queries. ` +
      `The target: the snapshot's median within ${CLI_LATENCY_TARGET}× the median of \`node -e ''\` plus the median round trip.`,
    '',
  ];
}

/**
 * Writes `section` (starting with its `## ` heading) into the Markdown `file`: in place of the
 * section of that heading, else before "## How each figure is taken", else at the end.
 *
 * @example
 * ```ts
 * replaceMarkdownSection('BENCHMARKS.md', cliLatencyMarkdown(figures, table, taken));
 * ```
 */
export function replaceMarkdownSection(file: string, section: readonly string[]): void {
  const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n') : ['# Benchmarks', ''];
  const heading = section[0]!;
  const start = lines.indexOf(heading);
  if (start >= 0) {
    const next = lines.findIndex((line, i) => i > start && line.startsWith('## '));
    lines.splice(start, (next < 0 ? lines.length : next) - start, ...section);
  } else {
    const before = lines.indexOf('## How each figure is taken');
    lines.splice(before < 0 ? lines.length : before, 0, ...section);
  }
  writeFileSync(file, lines.join('\n'));
}
