import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { builtInProjections } from '../projections/index.js';
import type { DiskSize } from './disk-size.js';
import { describeEnvironmentLines } from './environment.js';
import { type AppendFigures, type AppendMethod, methodName } from './measure-append.js';
import type { ScalingPoint } from './measure-scaling.js';
import { citusMarkdown } from './report-citus.js';
import type { BenchResults, FigureRow } from './bench-results.js';
import { alignedTable, markdownTable } from './tables.js';
import { evs, gib, int, mib, ms, msWithin, secs } from './format.js';

/** The projections the catch-up folds, as the report names them. */
const projectionNames = builtInProjections.map((projection) => projection.name).join(', ');

/** Round two's targets (issue 17): each figure against its limit where it has one. */
const TARGETS = {
  appendRatio: 0.8,
  catchUpRatio: 0.8,
  peakRssBytes: 100 * 1024 ** 2,
  liveP50Ms: 3,
  liveP99Ms: 10,
  liveCeilingEventsPerSecond: 20_000,
  queryP99Ms: 1,
  diskRatio: 0.6,
  smallEventsDiskRatio: 1.5,
  // Issue 33's, of the hash chain: appends with it against without it, verify against sha256sum
  // over the same bytes, a digest of 100,000 sessions, the backfill of 1M events.
  chainRatio: 0.9,
  verifyRatio: 0.5,
  digestSeconds: 5,
  backfillSeconds: 60,
};

/**
 * The append figures with a target: the API as several writers use it, and the CLI's import of a
 * folder of session files. The import's target applies only where the run did not measure it at
 * the catch-up corpus's size, since issue 17 sets its target at 1M events.
 */
function appendTargeted(method: AppendMethod, largeImport: AppendFigures | undefined): boolean {
  const folderImport = method.type === 'import-cli' && !method.path.endsWith('.jsonl');
  if (method.withoutChain) return false;
  return (method.type === 'api' && method.batch === 100 && method.writers > 1) || (folderImport && largeImport === undefined);
}

/** Each method of `figures` against its COPY limit, the limit first; `targeted` says which carry the append target. */
function copyRatioRows(figures: AppendFigures, limitFigure: string, targeted: (method: AppendMethod) => boolean): FigureRow[] {
  const copyRate = figures.methods.find((m) => m.method.type === 'copy')!.medianEventsPerSecond;
  const rows: FigureRow[] = [{ figure: `${limitFigure} (${int(figures.corpus.events)} events)`, value: evs(copyRate), limit: '—', ratio: '—', target: '—', holds: null }];
  for (const m of figures.methods) {
    if (m.method.type === 'copy') continue;
    const ratio = m.medianEventsPerSecond / copyRate;
    const hasTarget = targeted(m.method);
    rows.push({
      figure: m.name,
      value: evs(m.medianEventsPerSecond),
      limit: `COPY ${evs(copyRate)}`,
      ratio: `${ratio.toFixed(2)}×`,
      target: hasTarget ? `≥ ${TARGETS.appendRatio}× COPY` : '—',
      holds: hasTarget ? ratio >= TARGETS.appendRatio : null,
    });
  }
  return rows;
}

/** Each method measured with and without the hash chain (alternated in each run): the first against the second. */
function chainRatioRows(figures: AppendFigures): FigureRow[] {
  return figures.methods
    .filter((m) => m.method.withoutChain)
    .map((without) => {
      const chained = figures.methods.find((m) => !m.method.withoutChain && methodName({ ...m.method, withoutChain: true }) === without.name)!;
      const ratio = chained.medianEventsPerSecond / without.medianEventsPerSecond;
      return {
        figure: `${chained.name}: with the hash chain against without it (${int(figures.corpus.events)} events)`,
        value: evs(chained.medianEventsPerSecond),
        limit: `without ${evs(without.medianEventsPerSecond)}`,
        ratio: `${ratio.toFixed(2)}×`,
        target: `≥ ${TARGETS.chainRatio}× without`,
        holds: ratio >= TARGETS.chainRatio,
      };
    });
}

/** The chain's verify against sha256sum over the same texts, a digest, and the backfill, each against its target. */
function integrityRows(integrity: NonNullable<BenchResults['integrity']>): FigureRow[] {
  const { verify, digest, backfill } = integrity;
  const verifyRatio = verify.medianSha256sumSeconds / verify.medianVerifySeconds;
  return [
    {
      figure: `verify: the hash chain of ${int(verify.events)} events (verifyEventChain), against sha256sum over their stored texts (${mib(verify.textBytes)})`,
      value: secs(verify.medianVerifySeconds),
      limit: `sha256sum ${secs(verify.medianSha256sumSeconds)}`,
      ratio: `${verifyRatio.toFixed(2)}×`,
      target: `≥ ${TARGETS.verifyRatio}× sha256sum`,
      holds: verifyRatio >= TARGETS.verifyRatio,
    },
    {
      figure: `digest: os-audit digest over ${int(digest.sessions)} sessions (the bin, start-up included)`,
      value: secs(digest.medianSeconds),
      limit: '—',
      ratio: '—',
      target: `≤ ${TARGETS.digestSeconds} s`,
      holds: digest.medianSeconds <= TARGETS.digestSeconds,
    },
    {
      figure: `backfill: the hash chain of ${int(backfill.events)} events stored before it (backfillEventChain, after the migrations from 0016-sealed-history on)`,
      value: `${secs(backfill.seconds)} (${evs(backfill.events / backfill.seconds)})`,
      limit: '—',
      ratio: '—',
      target: `≤ ${TARGETS.backfillSeconds} s`,
      holds: backfill.seconds <= TARGETS.backfillSeconds,
    },
  ];
}

export function figureRows(r: Omit<BenchResults, 'figures' | 'totalSeconds' | 'phaseSeconds' | 'otherLoadPercent'>): FigureRow[] {
  const rows: FigureRow[] = copyRatioRows(r.append, 'append limit: raw COPY into an identical table', (method) => appendTargeted(method, r.largeImport));
  rows.push(...chainRatioRows(r.append));
  if (r.largeImport !== undefined) {
    rows.push(...copyRatioRows(r.largeImport, 'import limit: raw COPY of the same rows into an identical table', (method) => !method.withoutChain));
    rows.push(...chainRatioRows(r.largeImport));
  }
  const c = r.catchUp;
  const catchUpRatio = c.medianEventsPerSecond / c.medianLimitEventsPerSecond;
  rows.push({
    figure: `catch-up: os-audit project --once, ${int(c.events)} events from empty, into every projection (${projectionNames})`,
    value: evs(c.medianEventsPerSecond),
    limit: `set-based SQL ${evs(c.medianLimitEventsPerSecond)}`,
    ratio: `${catchUpRatio.toFixed(2)}×`,
    target: `≥ ${TARGETS.catchUpRatio}× limit`,
    holds: catchUpRatio >= TARGETS.catchUpRatio,
  });
  const correct = c.digestsEqual && c.verify.mismatches === 0 && c.verify.pending === 0;
  rows.push({
    figure: "catch-up result = set-based limit (md5 of each projection's JSON view) = fold (verify, 200 sampled per projection)",
    value: correct ? 'equal' : 'DIFFERENT',
    limit: '—',
    ratio: '—',
    target: 'equal',
    holds: correct,
  });
  rows.push({
    figure: `memory: daemon peak RSS during the ${int(c.events)}-event catch-up`,
    value: mib(c.medianPeakRssBytes),
    limit: '—',
    ratio: '—',
    target: `≤ ${mib(TARGETS.peakRssBytes)}`,
    holds: c.medianPeakRssBytes <= TARGETS.peakRssBytes,
  });
  const l = r.live;
  const rateNote = `${int(l.achievedEventsPerSecond)} ev/s, ${l.options.writers} writers`;
  const liveKept = l.unseen === 0 && l.achievedEventsPerSecond >= 0.95 * l.options.eventsPerSecond;
  rows.push({
    figure: `live: commit → visible in os_snapshot_json, p50 (${rateNote})`,
    value: msWithin(l.p50Ms, TARGETS.liveP50Ms),
    limit: '—',
    ratio: '—',
    target: `≤ ${TARGETS.liveP50Ms} ms at ${int(l.options.eventsPerSecond)} ev/s`,
    holds: liveKept && l.p50Ms <= TARGETS.liveP50Ms,
  });
  rows.push({
    figure: `live: commit → visible, p99 (${rateNote})`,
    value: msWithin(l.p99Ms, TARGETS.liveP99Ms),
    limit: '—',
    ratio: '—',
    target: `≤ ${TARGETS.liveP99Ms} ms at ${int(l.options.eventsPerSecond)} ev/s`,
    holds: liveKept && l.p99Ms <= TARGETS.liveP99Ms,
  });
  rows.push({ figure: 'live: commit → visible, max', value: ms(l.maxMs), limit: '—', ratio: '—', target: '—', holds: null });
  const ceiling = r.liveCeiling;
  rows.push({
    figure: `live: the highest steady rate with p99 ≤ ${ceiling.p99BoundMs} ms (batches of 100, 8 writers)`,
    value: `${ceiling.highestEventsPerSecond === null ? 'none held' : evs(ceiling.highestEventsPerSecond)} (rates tried: ${ceiling.steps.map((step) => `${int(step.askedEventsPerSecond)} → p99 ${ms(step.p99Ms)}${step.held ? '' : ` at ${evs(step.achievedEventsPerSecond)}, not held`}`).join('; ')})`,
    limit: '—',
    ratio: '—',
    target: `≥ ${evs(TARGETS.liveCeilingEventsPerSecond)}`,
    holds: (ceiling.highestEventsPerSecond ?? 0) >= TARGETS.liveCeilingEventsPerSecond,
  });
  const q = r.query;
  rows.push({ figure: `query: snapshot of one session, p50 (${int(q.sessions)} sessions)`, value: ms(q.p50Ms), limit: '—', ratio: '—', target: '—', holds: null });
  rows.push({
    figure: `query: snapshot of one session, p99 (${int(q.sessions)} sessions)`,
    value: msWithin(q.p99Ms, TARGETS.queryP99Ms),
    limit: '—',
    ratio: '—',
    target: `≤ ${TARGETS.queryP99Ms} ms`,
    holds: q.p99Ms <= TARGETS.queryP99Ms,
  });
  const large = r.largeQuery;
  if (large !== undefined) {
    const shape = `${int(large.sessions)} sessions of ${plural(large.listRowsPerCopy, 'row')} per list`;
    rows.push({ figure: `query: snapshot of one session, p50 (${shape})`, value: ms(large.p50Ms), limit: '—', ratio: '—', target: '—', holds: null });
    rows.push({
      figure: `query: snapshot of one session, p99 (${shape})`,
      value: msWithin(large.p99Ms, TARGETS.queryP99Ms),
      limit: '—',
      ratio: '—',
      target: `≤ ${TARGETS.queryP99Ms} ms`,
      holds: large.p99Ms <= TARGETS.queryP99Ms,
    });
  } else {
    rows.push({
      figure: 'query: snapshot of one session, p99 (10,000,000 sessions)',
      value: 'not measured (--scaling measures it)',
      limit: '—',
      ratio: '—',
      target: `≤ ${TARGETS.queryP99Ms} ms`,
      holds: false,
    });
  }
  const small = r.smallEvents;
  rows.push(
    ...diskRows(r.disk, `size on disk per million events`, `session_events table + indexes, sessions; bodies of ${int(Number(r.corpus.meanBytes))} bytes on average`, TARGETS.diskRatio),
    ...diskRows(small, `the same for ${int(small.events)} small events`, `bodies of ${int(small.meanBodyBytes)} bytes on average`, TARGETS.smallEventsDiskRatio),
  );
  if (r.integrity !== undefined) rows.push(...integrityRows(r.integrity));
  return rows;
}

/**
 * A size on disk against its target: after `os-audit seal` where the run sealed the log (the
 * size as appended beside it, for context), else as appended.
 */
function diskRows(size: DiskSize, figure: string, detail: string, target: number): FigureRow[] {
  const row = (text: string, measured: Omit<DiskSize, 'sealed'>, targeted: boolean): FigureRow => ({
    figure: text,
    value: mib(measured.bytesPerMillionEvents),
    limit: `raw JSON ${mib(measured.rawJsonBytesPerMillionEvents)}`,
    ratio: `${measured.ratioToRawJson.toFixed(2)}×`,
    target: targeted ? `≤ ${target}× raw JSON` : '—',
    holds: targeted ? measured.ratioToRawJson <= target : null,
  });
  if (size.sealed === undefined) return [row(`${figure} (${detail})`, size, true)];
  return [
    row(`${figure}, as appended (${detail})`, size, false),
    row(`${figure}, after os-audit seal (its history in a citus_columnar partition; the seal took ${size.sealed.sealSeconds.toFixed(1)} s)`, size.sealed, true),
  ];
}

const HEADERS = ['figure', 'value', 'limit', 'ratio', 'target', 'holds'] as const;

function cells(row: FigureRow): string[] {
  return [row.figure, row.value, row.limit, row.ratio, row.target, row.holds === null ? '—' : row.holds ? 'yes' : 'NO'];
}

/** The table as Markdown. */
export function markdownFigureTable(rows: readonly FigureRow[]): string {
  return markdownTable(HEADERS, rows.map(cells));
}

/** The table as aligned text, for the terminal. */
export function textTable(rows: readonly FigureRow[]): string {
  return alignedTable(HEADERS, rows.map(cells));
}

export function scalingLines(points: readonly ScalingPoint[]): string[][] {
  return points.map((p) => [
    int(p.events),
    evs(p.projectorEventsPerSecond),
    `${p.microsecondsPerEvent.toFixed(1)} µs`,
    evs(p.limitEventsPerSecond),
    `${p.ratio.toFixed(2)}×`,
    mib(p.peakRssBytes),
    `${mib(p.disk.bytesPerMillionEvents)} (${p.disk.ratioToRawJson.toFixed(2)}× raw JSON)`,
    p.digestsEqual ? 'yes' : 'NO',
  ]);
}

export const SCALING_HEADERS = [
  'events',
  'catch-up',
  'per event',
  'set-based limit',
  'ratio',
  'daemon peak RSS',
  'disk per million events',
  'equal',
] as const;

export function scalingText(points: readonly ScalingPoint[]): string {
  return `${alignedTable(SCALING_HEADERS, scalingLines(points))}\n\n${flatness(points)}`;
}

/**
 * How the cost per event at the largest size compares with the lowest cost of the curve (the
 * smallest sizes carry the process's start-up, so their cost per event is higher, not lower).
 */
export function flatness(points: readonly ScalingPoint[]): string {
  if (points.length < 2) return '';
  const last = points[points.length - 1]!;
  const cheapest = points.reduce((best, p) => (p.microsecondsPerEvent < best.microsecondsPerEvent ? p : best));
  const growth = last.microsecondsPerEvent / cheapest.microsecondsPerEvent;
  return (
    `cost per event at ${int(last.events)} events / the lowest of the curve (at ${int(cheapest.events)}): ${growth.toFixed(2)}× ` +
    `(${growth <= 1.25 ? 'flat: within 25%' : 'NOT flat: it grows with the log'})`
  );
}

export function writeJson(file: string, results: BenchResults): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
}

/**
 * Each figure of `r` beside the same figure of `other` (another run), for the spread between
 * runs; a figure only one of them measured shows "—" for the other.
 */
export function spreadMarkdown(r: BenchResults, other: BenchResults): string[] {
  const theirs = new Map(other.figures.map((row) => [row.figure, row]));
  const held = (rows: readonly FigureRow[]) => `${rows.filter((row) => row.holds === true).length} of ${rows.filter((row) => row.holds !== null).length}`;
  const yesNo = (holds: boolean | null | undefined) => (holds === true ? 'yes' : holds === false ? 'NO' : '—');
  const shown = (row: FigureRow) => (row.ratio === '—' ? row.value : `${row.value} (${row.ratio})`);
  return [
    '## The spread: a second run',
    '',
    `The same figures from another run of the benchmark, taken ${other.startedAt} (\`${other.command}\`, ${(other.totalSeconds / 60).toFixed(1)} minutes; other work took ${other.otherLoadPercent.total ?? '?'}% of the machine's CPU meanwhile), beside this run's: ${held(other.figures)} targets held there, ${held(r.figures)} here. (\`--spread FILE\` adds this section from that run's \`--json\` file; \`--render FILE\` writes this file again from a run's file without measuring.)`,
    '',
    markdownTable(
      ['figure', 'this run', 'second run', 'target', 'holds here', 'holds there'],
      r.figures.map((row) => {
        const there = theirs.get(row.figure);
        return [row.figure, shown(row), there === undefined ? '—' : shown(there), row.target, yesNo(row.holds), yesNo(there?.holds)];
      }),
    ),
    '',
  ];
}

/**
 * BENCHMARKS.md: the latest table (beside `spread`'s, another run's, when given), the machine it
 * ran on, how to reproduce it, and how each figure is taken.
 */
export function writeMarkdown(file: string, r: BenchResults, spread?: BenchResults): void {
  const held = r.figures.filter((row) => row.holds === true).length;
  const targeted = r.figures.filter((row) => row.holds !== null).length;
  const lines: string[] = [
    '# Benchmarks',
    '',
    `Latest run: ${r.startedAt}, ${(r.totalSeconds / 60).toFixed(1)} minutes in all; ${held} of ${targeted} targets hold.` +
      (r.otherLoadPercent.total === null ? '' : ` Other work on the machine took ${r.otherLoadPercent.total}% of its CPU meanwhile (per phase below).`),
    '',
    ...describeEnvironmentLines(r.environment).map((line) => `- ${line}`),
    '',
    'Reproduce it (the server of `DATABASE_URL`, else an embedded PostgreSQL the benchmark starts):',
    '',
    '```sh',
    'npm ci',
    `${r.command}`,
    '```',
    '',
    `Every figure is the median of ${plural(r.options.runs, 'run')}, all taken in one run of the benchmark.`,
    '',
    markdownFigureTable(r.figures),
    '',
    ...(spread === undefined ? [] : spreadMarkdown(r, spread)),
  ];
  if (r.scaling && r.scaling.length > 0) {
    lines.push(
      '## Scaling',
      '',
      'One database grown to each size; at each size one catch-up from an empty projection and one run of the limit (`npm run bench -- --scaling`).',
      '',
      markdownTable(SCALING_HEADERS, scalingLines(r.scaling)),
      '',
      `${flatness(r.scaling)}.`,
      '',
    );
  }
  if (r.citus) lines.push(...citusMarkdown(r, r.citus));
  lines.push(
    '## How each figure is taken',
    '',
    `- **Corpus**: generated from a fixed seed (\`bench/corpus.ts\`): ${corpusLine(r.corpus)}. Sessions of 150–250 events, 256 of them running at once so that the log interleaves them; 2–5 sub-agents per session whose state goes running → joined / failed (and back); suspends followed by resumes. Every 100th event (and the first 2,000) is checked with \`validateEvent\`.`,
    `- **Catch-up**: the corpus (${int(r.catchUp.events)} events, ${int(r.catchUp.sessions)} sessions) is COPYed into \`session_events\` (one transaction per 100,000 rows) with its \`sessions\` rows, then \`VACUUM ANALYZE\` and \`CHECKPOINT\`. Each run empties the projection (TRUNCATE of the snapshot tables, checkpoint back to 0), then spawns the built CLI \`node dist/src/cli/main.js project --once\` and times it from spawn to exit (Node's start-up, ${r.catchUp.startupSeconds.toFixed(2)} s for \`node dist/src/cli/main.js --help\`, included); its peak RSS is the largest VmHWM/VmRSS of \`/proc/<pid>/status\`, sampled every 50 ms.`,
    `- **Projections**: the ones os-audit ships (${projectionNames}), which \`os-audit project\` runs side by side in one daemon, each with its own batches and connection.`,
    "- **Set-based limit**: on the emptied projections, `foldWholeLogSql(projection)` of each, one after the other in one transaction: each projection's own fold SQL over the whole log in one statement straight from `session_events`, reading each body's fields from its stored JSON text as the projector does. The limit's time is their sum; the daemon may fold the projections side by side (one per core), which the ratio then shows. Its result and the projector's are compared by the md5 of every row of each projection's JSON view, and 200 sampled sessions of each projection are verified against its in-memory fold (`verifyProjection`).",
    `- **Append**: ${int(r.append.corpus.events)} events (about a tenth of the catch-up corpus) in ${int(r.append.corpus.sessions)} sessions of ${int(r.append.corpus.sessionLength)} events (so that a batch of 1,000 is one session append), each sample on a new migrated database after a CHECKPOINT. The API: \`EventStore.append(sessionId, events)\` (appended at the head of the log, no expected seq), each writer on its own sessions and its own connection. Import: \`importLogs(store, directory)\` in-process on a directory of \`<session_id>.jsonl\` files, one per session (each its own transaction); and the built CLI \`node dist/src/cli/main.js import FILE\` on the same events as one stream (\`{"session_id", "seq", "event"}\` lines, the sessions interleaved event by event: one transaction), timed from spawn to exit, start-up included. The limit: the same rows (session_id, seq, kind, turn, payload, and the other columns as \`EventStore.append\` fills them) COPYed with pg-copy-streams on one connection into \`CREATE TABLE … (LIKE session_events INCLUDING ALL)\`, each sample on its own new database too.`,
    `- **Live**: on the catch-up database, the daemon \`node dist/src/cli/main.js project --poll-interval 1000\` (woken by NOTIFY); ${r.live.options.writers} writers append ${int(r.live.options.eventsPerSecond)} events/s in all on a fixed schedule, in batches of ${r.live.options.batch}, each to its own ${r.live.options.sessionsPerWriter} open sessions of ~200 events. Latency: from the resolution of an append's promise (its commit) until a poller, reading \`SELECT session_id, last_seq FROM os_snapshots WHERE session_id = ANY($1)\` for the sessions awaiting an effect about every 1 ms (its round trip: p50 ${ms(r.live.pollP50Ms)}), sees the append folded. ${r.live.options.warmupSeconds} s of warm-up, then ${plural(r.live.options.windows, 'window')} of ${r.live.options.windowSeconds} s; each figure is the median over the windows.`,
    `- **Query**: the snapshot tables of the catch-up database are grown to ${int(r.query.sessions)} sessions by copying its ${int(r.query.projectedSessions)} projected sessions (the corpus's and the live run's, with their processes, signals and budget events) under new ids (the tables' indexes kept up to date row by row, as the projector's inserts keep them, then \`VACUUM ANALYZE\` and \`CHECKPOINT\`); then \`SELECT snapshot FROM os_snapshot_json WHERE session_id = $1\` for random sessions, one at a time on one connection, each sent unprepared (parsed and planned at every query, as psql and most dashboards send theirs), timed at the client (${int(r.query.queriesPerRun)} queries per run after a warm-up).${r.largeQuery === undefined ? '' : ` With \`--scaling\`, the same tables are then grown to ${int(r.largeQuery.sessions)} sessions (${gib(r.largeQuery.tablesBytes)} with their indexes), each new copy keeping its original's snapshot row and ${plural(r.largeQuery.listRowsPerCopy, 'row')} of each list (processes, signals, budget events; the first by primary key): at the corpus's whole shape (${int(r.query.tablesBytes / r.query.sessions)} bytes a session among ${int(r.query.sessions)}) they would take about ${gib((r.query.tablesBytes / r.query.sessions) * r.largeQuery.sessions)} (this machine has ${r.environment.memoryGiB} GiB of memory) and much longer to copy; lighter sessions keep the tables' pages in the operating system's cache, as at ${int(r.query.sessions)} sessions, so this figure is a lower bound for as many sessions of the whole shape. The sessions queried are a seeded sample of 200,000 of them (\`TABLESAMPLE BERNOULLI\`), the queries as above.`}`,
    `- **Live ceiling**: the same measurement, with batches of 100 (8 writers in the benchmark's one Node process reach about 9,000 events/s with batches of 10 on this machine, which would measure the writers), one window of 5 s per rate, at ${r.liveCeiling.steps.length > 0 ? 'rates of ' : ''}${r.liveCeiling.steps.map((step) => int(step.askedEventsPerSecond)).join(', ')} events/s in turn until one does not hold: the writers fall below 95% of it, an append is not seen, or p99 passes ${r.liveCeiling.p99BoundMs} ms. Each live measurement starts from a settled database (\`VACUUM ANALYZE\`, then \`CHECKPOINT\`): the catch-up runs before it emptied and refilled the snapshot tables, which autovacuum would otherwise vacuum and analyze during the windows.`,
    '- **Size on disk**: `pg_table_size` + `pg_indexes_size` of `session_events` (of each of its partitions, once sealed) plus `pg_total_relation_size` of `sessions`, per million events, after loading the catch-up corpus; its limit is the UTF-8 bytes of the events\' JSON as written (the bodies alone, no session ids or seqs), per million events. Then, after the catch-up and where the server has `citus_columnar`, one more event is appended and every projection folds it (the corpus is loaded in transactions of 100,000 events, and a seal leaves the transaction of the projections\' checkpoint unsealed), `sealEventLog` (what `os-audit seal` runs) moves what the projections have folded, the whole corpus, into a columnar partition, and the same sizes are taken again: that figure carries the target. The live and query figures are then taken on the sealed log (live appends go to the heap partition after it, which the daemon reads). **Small events**: the same, for 200,000 events generated as the corpus is with bodies of 130–230 bytes (a kind whose fields alone are longer keeps them), loaded the same way into a database of their own, and sealed likewise (folded by every projection in this process first).',
    `- **Import DIR**: \`node dist/cli/os-audit.cjs import DIR\` (the package's bin, as users run it) on the append corpus's folder of session files, timed from spawn to exit, start-up included, each sample on a new migrated database; the limit is the same COPY as the other append figures.${r.largeImport === undefined ? '' : ` The target (issue 17: the bin, start-up included, 1M events) is measured on a folder of ${int(r.largeImport.corpus.events)} events as large as the catch-up corpus: ${int(r.largeImport.corpus.sessions)} session files of ${int(r.largeImport.corpus.sessionLength)} events from the append corpus's generator (its first ${int(r.append.corpus.sessions)} sessions are the append corpus), against a COPY of the same rows, each run's samples on new databases as above. On the append corpus's folder, a tenth of the events, the bin's start-up weighs ten times as much.`}`,
    ...(r.integrity === undefined ? [] : [integrityMethod(r.integrity)]),
    '',
    '## Phase timings of this run',
    '',
    ...Object.entries(r.phaseSeconds).map(
      ([phase, seconds]) => `- ${phase}: ${seconds.toFixed(1)} s` + (r.otherLoadPercent.phases[phase] == null ? '' : ` (other work took ${r.otherLoadPercent.phases[phase]}% of the machine meanwhile)`),
    ),
    '',
  );
  writeFileSync(file, lines.join('\n'));
}

/** How the hash chain's figures are taken, for BENCHMARKS.md. */
function integrityMethod({ verify, digest, backfill }: NonNullable<BenchResults['integrity']>): string {
  return (
    "- **Hash chain**: with and without it, the append API (batches of 100, 8 writers) and the bin's import DIR, each in the same runs as the figures above, the two one after the other in each run; without it, each sample's new database has the chain's three triggers disabled (`session_events_chain`, `session_events_set_head_hashes`, `sessions_head_hash_of_last_event`). " +
    `**Verify**: \`verifyEventChain\` over the catch-up database (${int(verify.events)} events, ${int(verify.sessions)} sessions) after the catch-up, before the seal, in this process; each run followed by \`sha256sum\` over a file of the same events' stored texts (\`coalesce(payload_text, payload::text)\`, what the chain hashes, a line each as COPY writes them: ${mib(verify.textBytes)}), timed from spawn to exit; the ratio is sha256sum's time over verify's. ` +
    `**Digest**: \`os-audit digest --out FILE\` (the bin, start-up included) on a database of its own holding ${int(digest.sessions)} sessions of ${plural(Math.round(digest.events / digest.sessions), 'small event')}, loaded as the catch-up corpus is. ` +
    `**Backfill**: the catch-up corpus's ${int(backfill.events)} events loaded the same way into a database migrated to 0016-sealed-history, the last migration before the chain; then the later migrations (${secs(backfill.migrateSeconds)}) and \`backfillEventChain\` (what \`os-audit migrate\` runs after them), timed alone, once.`
  );
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function corpusLine(corpus: Record<string, unknown>): string {
  const share = Number(corpus.snapshotKindShare ?? 0) * 100;
  return (
    `${int(Number(corpus.events))} events, every kind of the contract plus three newer kinds and the three kinds the v0.2.60 snapshot adds (\`budget_exceeded\` with the \`operation_id\` v0.2.60 writes), ` +
    `${share.toFixed(1)}% of them of the kinds the seed's snapshot reads, bodies of ${String(corpus.minBytes)}–${String(corpus.maxBytes)} bytes (mean ${String(corpus.meanBytes)})`
  );
}
