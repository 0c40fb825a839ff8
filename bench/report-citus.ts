import { builtInProjections } from '../projections/index.js';
import { describePlans, onTheShards } from './citus-limit.js';
import { describeSettings } from './environment.js';
import { evs, int, mib, ratio } from './format.js';
import type { AppendFigures } from './measure-append.js';
import type { CatchUpFigures } from './measure-catch-up.js';
import type { CitusFigures } from './measure-citus.js';
import type { BenchResults } from './bench-results.js';
import { alignedTable, markdownTable } from './tables.js';

/**
 * The Citus section of the report: each figure measured on the cluster beside the same figure
 * on the single server. Each side has its ratio to its own limit, the cluster's measured on the
 * cluster, and the cluster's figure is divided by the single server's.
 */
export const CITUS_HEADERS = ['figure', 'single server', 'ratio', 'cluster', "cluster's limit", 'ratio', 'cluster ÷ single'] as const;

type Results = Pick<BenchResults, 'append' | 'catchUp' | 'citus'>;

const projectionNames = builtInProjections.map((projection) => projection.name).join(', ');

/** The rows of the Citus table (empty without Citus figures). */
export function citusLines(r: Results): string[][] {
  const c = r.citus;
  if (!c) return [];
  const lines: string[][] = [];
  const singleCopy = copyRate(r.append);
  const clusterCopy = copyRate(c.append);
  lines.push([
    `append limit: raw COPY of the ${int(c.append.corpus.events)} events (on the cluster into a table distributed as session_events, through the coordinator)`,
    evs(singleCopy),
    '—',
    evs(clusterCopy),
    '—',
    '—',
    ratio(clusterCopy / singleCopy),
  ]);
  for (const method of c.append.methods) {
    if (method.method.type === 'copy') continue;
    const single = r.append.methods.find((m) => m.name === method.name);
    const cluster = method.medianEventsPerSecond;
    // NaN when every run failed (null once read back from the JSON file).
    const measured = Number.isFinite(cluster);
    lines.push([
      method.name,
      single ? evs(single.medianEventsPerSecond) : '—',
      single ? ratio(single.medianEventsPerSecond / singleCopy) : '—',
      `${measured ? evs(cluster) : 'FAILED'}${failuresNote(method.failures, method.samples.length)}`,
      `COPY ${evs(clusterCopy)}`,
      measured ? ratio(cluster / clusterCopy) : '—',
      single && measured ? ratio(cluster / single.medianEventsPerSecond) : '—',
    ]);
  }
  const s = r.catchUp;
  const k = c.catchUp;
  lines.push([
    `catch-up limit: set-based SQL of every projection over the whole log (on the cluster: a read into its batch table, then its fold statements, each on the shards)`,
    evs(s.medianLimitEventsPerSecond),
    '—',
    evs(k.medianLimitEventsPerSecond),
    '—',
    '—',
    ratio(k.medianLimitEventsPerSecond / s.medianLimitEventsPerSecond),
  ]);
  lines.push([
    `catch-up: os-audit project --once, ${int(k.events)} events from empty, into every projection (${projectionNames})`,
    evs(s.medianEventsPerSecond),
    ratio(s.medianEventsPerSecond / s.medianLimitEventsPerSecond),
    evs(k.medianEventsPerSecond),
    `set-based ${evs(k.medianLimitEventsPerSecond)}`,
    ratio(k.medianEventsPerSecond / k.medianLimitEventsPerSecond),
    ratio(k.medianEventsPerSecond / s.medianEventsPerSecond),
  ]);
  lines.push([`memory: daemon peak RSS during the catch-up`, mib(s.medianPeakRssBytes), '—', mib(k.medianPeakRssBytes), '—', '—', '—']);
  lines.push([
    "catch-up result: the cluster's (projector and limit) = the single server's (md5 of each projection's JSON view) = fold (verify, 200 sampled per projection)",
    correct(s) ? 'equal' : 'DIFFERENT',
    '—',
    correct(k) && c.equalsSingleNode ? 'equal' : 'DIFFERENT',
    '—',
    '—',
    '—',
  ]);
  return lines;
}

/** ` (2 of 3 runs failed: …)`: why, when runs of a method failed on the cluster. */
function failuresNote(failures: readonly string[] | undefined, succeeded: number): string {
  if (!failures || failures.length === 0) return '';
  const reasons = [...new Set(failures)].join('; ');
  return ` (${failures.length} of ${failures.length + succeeded} runs failed: ${reasons})`;
}

/** `COPY limit 35,079–46,570 ev/s, …`: each cluster figure's slowest and fastest run. */
function spreadNote(c: CitusFigures): string {
  const range = (name: string, rates: readonly number[]) =>
    rates.length === 0 ? `${name}: no run` : `${name} ${int(Math.min(...rates))}–${evs(Math.max(...rates))}`;
  const k = c.catchUp;
  return [
    ...c.append.methods.filter((m) => m.samples.length > 0).map((m) => range(m.name, m.samples.map((sample) => sample.eventsPerSecond))),
    range('catch-up limit', k.limitSeconds.map((seconds) => k.events / seconds)),
    range('catch-up', k.projector.map((run) => run.eventsPerSecond)),
  ].join('; ');
}

/** `2 batches per run, summed over the 2 projections`, from the projector's summaries. */
function batchesNote(c: CatchUpFigures): string {
  const counts = [...new Set(c.projector.map((run) => run.batches))];
  return `${counts.join(' or ')} batches per run, summed over the ${builtInProjections.length} projections`;
}

function copyRate(append: AppendFigures): number {
  return append.methods.find((m) => m.method.type === 'copy')!.medianEventsPerSecond;
}

function correct(c: CatchUpFigures): boolean {
  return c.digestsEqual && c.verify.mismatches === 0 && c.verify.pending === 0;
}

/** The Citus table as aligned text, for the terminal. */
export function citusText(r: Results): string {
  return alignedTable(CITUS_HEADERS, citusLines(r));
}

/** The `## Citus` section of BENCHMARKS.md (the README links to its heading). */
export function citusMarkdown(r: BenchResults, c: CitusFigures): string[] {
  const env = c.environment;
  const citusPhases = Object.entries(r.otherLoadPercent.phases).filter(([phase]) => phase.startsWith('citus:'));
  const otherLoads = citusPhases.map(([, load]) => load).filter((load): load is number => load !== null);
  const worst = otherLoads.length > 0 ? Math.max(...otherLoads) : null;
  const k = c.catchUp;
  return [
    '## Citus',
    '',
    `With \`--citus\`, after the figures above, the benchmark starts a Citus cluster on this machine, a coordinator and ${env.workers} workers, each a PostgreSQL server of its own (Citus ${env.citusVersion}, PostgreSQL ${env.postgresVersion}, ${env.shardCount} shards per distributed table), and measures the same corpora the same way on it: the ${int(c.append.corpus.events)} append events, and the ${int(k.events)} catch-up events generated again from their seed (the same events). \`os-audit migrate\` distributes the tables by \`session_id\` there (see [docs/scale-out.md](docs/scale-out.md)). Each figure is the median of ${r.options.runs} run${r.options.runs === 1 ? '' : 's'}; each ratio is to the limit of its own side, the cluster's measured on the cluster.`,
    '',
    ...env.settings.map((entry) => `- settings (${entry.nodes}): ${describeSettings(entry.settings)}`),
    `- the cluster started in ${env.startSeconds.toFixed(1)} s; load average (1 min) when its part of the run began: ${env.loadAverageAtStart}`,
    '',
    markdownTable(CITUS_HEADERS, citusLines(r)),
    '',
    `**Nothing here gains from a cluster.** The machine has ${r.environment.cores} cores, and the coordinator, both workers, the benchmark and the projector run on it together. Every cluster figure pays what distribution costs (the coordinator plans each statement and holds connections to the workers, a transaction that writes on both workers commits with two-phase commit, each node flushes its own WAL) and gets none of what more machines would give: the shards' work runs in parallel on the same ${r.environment.cores} cores that the coordinator and the client use. Read the cluster column as what the code does on Citus with no hardware to spread over, not as what a cluster would do.`,
    '',
    `The runs' spread (slowest–fastest) on the cluster: ${spreadNote(c)}.`,
    '',
    `Other work on the machine took ${citusPhases.map(([phase, load]) => `${load ?? '?'}% during ${phase.replace(/^citus: /, '').replace(/:.*$/, '')}`).join(', ')}` +
      (worst !== null && worst > 5 ? `: the cluster figures are skewed by it, compare them with care.` : '.'),
    '',
    '### How each cluster figure is taken',
    '',
    '- **Append**: the same corpus, methods and writers as on the single server, each sample on a new database created on the three nodes and migrated (distributed). The API and both imports write through the coordinator; an append to one session is routed to its worker and commits there in one phase. The stream import is one transaction over every session, so it writes on both workers and commits with two-phase commit; the in-process import stores a group of session files per transaction, 4 at once. The limit: the same rows COPYed through the coordinator into a table `LIKE session_events` distributed by `session_id` and colocated with it (no triggers). A method that fails on the cluster is reported as such with its error, and the run goes on.',
    '- **CHECKPOINT**: before each measured step it runs on every node (`run_command_on_workers`), since each worker writes its own shards.',
    `- **Catch-up**: the corpus is loaded through the coordinator by the same loader (COPY into the distributed \`session_events\`, heads moved first in each transaction), then \`VACUUM ANALYZE\`, which Citus runs on each shard. \`os-audit project --once\` runs against the coordinator: on Citus the projector finds new events by seq, and each statement of its batches runs on the shards (docs/scale-out.md). A batch takes sessions oldest first up to the batch size in events (as on one server), so it folded the whole log in ${batchesNote(k)}, each batch one distributed transaction. Beyond what the limit does, a batch plans its work (\`sessions\` against the projection's heads, into \`projection_work\`), reads the events through that plan, looks for holes and unreadable events (window functions over the batch), counts the events, and empties the work and batch tables with DELETE.`,
    `- **Set-based limit on the cluster**: what the projector's batches do, over the whole log at once, every projection in turn in one transaction: one statement reads the events of the kinds the projection reads, each body's fields parsed once, into the projection's batch table (distributed, colocated, unlogged), then the projection's fold statements read the events from it and each session's last seq and counters from the log (\`bench/citus-limit.ts\`); the batch tables are emptied after the clock stops. Each statement is EXPLAINed before the runs, and the run stops if one would pass through the coordinator: ${k.limitPlans ? describePlans(k.limitPlans) : 'not recorded'} ("repartition": run on the shards, the rows sent worker to worker into the batch table's shards, as the projector's read of a batch is). Not the single server's \`foldWholeLogSql\` (common table expressions over one materialized read), which Citus would pull through the coordinator, nor the fold statements over \`\` eventBatchOf(projection, sql\`session_events\`) \`\`, whose events read the fields in a lateral subquery that Citus either refuses in a multi-shard statement or plans apart and collects on the coordinator (EXPLAIN in this run: ${k.eventBatchOfPlans ? `${k.eventBatchOfPlans.filter((plan) => !onTheShards(plan)).length} of ${k.eventBatchOfPlans.length} not on the shards; ${describePlans(k.eventBatchOfPlans)}` : 'not recorded'}).`,
    "- **Result**: the cluster's snapshots, after the limit and after each projector run, have the same md5 (every projection's JSON view) as the single server's, and 200 sampled sessions of each projection are verified against the in-memory fold.",
    '',
    '### With workers on separate machines',
    '',
    'This part is reasoning from what each statement does and where Citus runs it, with one check made by hand and said to be one; nothing here was measured with workers on separate machines.',
    '',
    "- **Per worker, in parallel.** The fold statements (one task per shard, on the worker holding it), the read of a batch's events into the batch table (the join of the work with `session_events` and the parsing of each body), the rows a COPY or an append writes into the shards with their indexes, and the contiguity triggers of every append (which read the session's head and log where they live) all run on the workers. Each worker holds about 1/N of the sessions, so with N workers on their own machines this work should spread N ways. On this machine it could not: the two workers shared the same two cores with the coordinator and the client.",
    "- **Coordinator-bound.** Each batch's planning scan of `sessions` against the projection's heads is pushed down, but the coordinator plans every statement of every batch (about a dozen), fans each out over the workers' connections and commits every batch, a distributed transaction that writes on each worker and on the coordinator, with two-phase commit: a cost per batch that does not shrink as workers are added. A COPY through the coordinator has it parse and route every row to its shard. Appends and imports go through the coordinator unless the writers connect to the workers (Citus routes writes from any node; those writers then wake no daemon and it polls): each append's parsing, planning, routing and commit round trips, and the NOTIFY wake-up, are the coordinator's. The lease and checkpoint rows are plain tables on the coordinator, locked and updated by every batch: one projection's batches stay serial however many workers there are.",
    "- **One append is one worker's.** An `EventStore.append` to one session moves its head and inserts its events in statements Citus sends as they are to that session's shard, so it runs and commits on the one worker holding the session, in one phase. A test proves it on every run of the cluster suite (`test/citus/store.int.spec.ts` › commits an append to one session on its worker alone: with `citus.log_remote_commands`, every command goes to that worker and none is a `PREPARE TRANSACTION`). A stream import over sessions on several workers, and each projector batch, write on several workers and commit with two-phase commit. So appends to different sessions spread over the workers; what stays with the coordinator is planning and routing each statement.",
    '- **So**: the shards\' share of each figure should grow with the workers until the coordinator, which sees every batch, every append and every COPYed row, becomes the bound. The set-based limit leans on it least (a dozen statements in all, no rows through it), then the catch-up (the same per batch, plus the batch\'s own statements and its two-phase commit); the COPY limit and the stream import pass every row through it; the append API pays the coordinator\'s planning and routing on every append of 100 events, and commits on one worker. How far each would grow is not measured here: it needs workers on separate machines.',
    '',
  ];
}
