/**
 * `npm run bench`: the performance suite (see BENCHMARKS.md). It generates a seeded corpus, then
 * measures in one run, each figure a median of `--runs`:
 *
 * - appends (API, import) against raw COPY, and the CLI's import of a folder of as many events
 *   as the catch-up corpus against COPY;
 * - catch-up projection against the set-based SQL limit;
 * - live commit-to-visible latency, the snapshot query, the daemon's peak RSS, the size on disk;
 * - the hash chain's cost: appends and import with it against without it, verify against
 *   sha256sum, a digest, the backfill;
 * - with `--scaling`, the catch-up curve at 100k, 1M and 5M events;
 * - with `--citus`, the appends and the catch-up again on a local Citus cluster (a coordinator
 *   and two workers), beside the single server's figures;
 * - the CLI's latency (`--only cli-latency` measures that alone).
 *
 * It prints a table and writes JSON. With `--markdown` it writes BENCHMARKS.md (with `--only
 * cli-latency`, its "CLI latency" section alone).
 *
 * PostgreSQL: `DATABASE_URL` (a superuser connection; the benchmark creates and drops its own
 * databases there), else a container (testcontainers), else an embedded server.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startPostgres } from '../test/support/postgres-server.js';
import { createScratchDatabase } from '../test/support/scratch-database.js';
import { loadRows, probeEventLayout } from './copy-rows.js';
import { CorpusStats, InterleavedCorpus } from './corpus.js';
import { describeDiskSize, type DiskSize, diskSize, sealedDiskSize, smallEventsDiskSize } from './disk-size.js';
import { describeEnvironment, describeEnvironmentLines } from './environment.js';
import { type AppendMethod, makeAppendCorpus, measureAppends, writeImportDirectory, writeImportStream } from './measure-append.js';
import { measureCatchUp } from './measure-catch-up.js';
import { CITUS_WORKERS, measureCitus } from './measure-citus.js';
import { type CliLatencyFigures, measureCliLatency } from './measure-cli-latency.js';
import { measureBackfill, measureDigest, measureVerify } from './measure-integrity.js';
import { measureLive, measureLiveCeiling } from './measure-live.js';
import { type GrowOptions, growSnapshotTables, measureQuery, type QueryFigures, snapshotTablesSize } from './measure-query.js';
import { measureScaling } from './measure-scaling.js';
import { otherLoad } from './other-load.js';
import type { BenchResults } from './bench-results.js';
import { figureRows, markdownFigureTable, scalingText, textTable, writeJson, writeMarkdown } from './report.js';
import { citusText } from './report-citus.js';
import { type CliLatencyTaken, cliLatencyMarkdown, cliLatencyRows, replaceMarkdownSection } from './report-cli-latency.js';
import { gib, int } from './format.js';
import { secondsSince } from './stats.js';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const cliEntry = path.join(repoRoot, 'dist', 'src', 'cli', 'main.js');
/** The package's bin (the bundled CLI), as users run it. */
const binEntry = path.join(repoRoot, (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin['os-audit']!);
const SEED = 'os-audit-bench-1';
const APPEND_SESSION_LENGTH = 1000;
const APPEND_WRITERS = 8;
const QUERY_SESSIONS = 100_000;
/** With --scaling, the query again among this many sessions, each copy keeping one row of each list. */
const LARGE_QUERY_SESSIONS = 10_000_000;
const LARGE_QUERY_LIST_ROWS = 1;
/** Small events (about 180 bytes of JSON each) loaded for their size on disk. */
const SMALL_EVENTS = 200_000;
/** The rates tried for the live ceiling, in turn until one does not hold (batches of 100, 8 writers). */
const LIVE_CEILING_RATES = [5_000, 10_000, 20_000, 25_000, 30_000, 40_000, 60_000];
const LIVE_CEILING_P99_MS = 100;
/** Sessions that the digest figure covers (issue 33: ≤ 5 s for 100,000); a digest reads their heads, not their events. */
const DIGEST_SESSIONS = 100_000;
const DIGEST_SESSION_LENGTH = 1;
const SCALING_SIZES = [100_000, 1_000_000, 5_000_000];
/** Runs of each command of the CLI-latency figure; npx's are slow and only for comparison. */
const CLI_LATENCY_RUNS = 50;
const NPX_RUNS = 10;
/** The session the CLI-latency figure prints, from samples/. */
const CLI_LATENCY_SESSION = 'sample-000000';
const CLI_LATENCY_PHASE = "cli latency: os-audit snapshot S against node -e '' plus a round trip";

const USAGE = `usage: npm run bench -- [options]

  --events N        catch-up corpus size (default 1000000); appends use about N/10, the
                    import DIR target, the hash chain's verify and its backfill N
  --runs K          runs per figure, the median is reported (default 3)
  --scaling         also the catch-up curve at 100k, 1M and 5M events, and the query among
                    10M sessions (long)
  --large-query-sessions N
                    with --scaling, the query among N sessions instead of 10M
  --scaling-sizes L the sizes of that curve instead, e.g. 100000,1000000
  --citus           then, on a local Citus cluster (a coordinator and ${CITUS_WORKERS} workers on this
                    machine, PostgreSQL 15 with Citus installed), the same corpora measured the
                    same way: append (batches of 100, 8 writers) and import against COPY, and the
                    catch-up against the set-based limit on the shards; printed beside the single
                    server's figures (which it runs first), and a Citus section in --markdown
  --json PATH       where to write the figures (default bench/results/latest.json)
  --markdown PATH   also write the table as Markdown (e.g. BENCHMARKS.md)
  --spread JSON     with --markdown, also show the figures of another run (its --json file)
                    beside this run's, for the spread between runs
  --render JSON     measure nothing: write --markdown from that run's --json file (and --spread)
  --only cli-latency
                    measure only the CLI's latency (os-audit snapshot S against node -e '' plus
                    one query's round trip); with --markdown, write only its section of the file
                    (default JSON: bench/results/cli-latency.json)
  --no-build        use dist/ as it is instead of running npm run build first
  --help

PostgreSQL: DATABASE_URL (superuser; scratch databases are created and dropped there),
else testcontainers when Docker answers, else an embedded PostgreSQL.`;

function parseOptions() {
  const { values } = parseArgs({
    options: {
      events: { type: 'string', default: '1000000' },
      runs: { type: 'string', default: '3' },
      scaling: { type: 'boolean', default: false },
      citus: { type: 'boolean', default: false },
      'scaling-sizes': { type: 'string' },
      'large-query-sessions': { type: 'string' },
      only: { type: 'string' },
      json: { type: 'string' },
      markdown: { type: 'string' },
      spread: { type: 'string' },
      render: { type: 'string' },
      'no-build': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    allowPositionals: false,
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const events = positiveInteger(values.events, '--events');
  const runs = positiveInteger(values.runs, '--runs');
  if (events < 10_000) fail('--events must be at least 10000');
  if (values.only !== undefined && values.only !== 'cli-latency') fail(`--only takes cli-latency, got ${JSON.stringify(values.only)}`);
  if ((values.spread !== undefined || values.render !== undefined) && values.markdown === undefined) fail('--spread and --render write --markdown: give it');
  const sizesText = values['scaling-sizes'];
  const scalingSizes = sizesText === undefined ? SCALING_SIZES : sizesText.split(',').map((size) => positiveInteger(size.trim(), '--scaling-sizes'));
  if (scalingSizes.some((size, i) => i > 0 && size <= scalingSizes[i - 1]!)) fail('--scaling-sizes must grow');
  return {
    events,
    runs,
    scaling: values.scaling || sizesText !== undefined,
    scalingSizes,
    largeQuerySessions: values['large-query-sessions'] === undefined ? LARGE_QUERY_SESSIONS : positiveInteger(values['large-query-sessions'], '--large-query-sessions'),
    citus: values.citus,
    only: values.only,
    json: values.json ?? path.join('bench', 'results', values.only === undefined ? 'latest.json' : `${values.only}.json`),
    markdown: values.markdown,
    spread: values.spread === undefined ? undefined : readResults(values.spread),
    spreadFile: values.spread,
    render: values.render === undefined ? undefined : readResults(values.render),
    build: !values['no-build'],
  };
}

/** A run's results from its --json file, its figures made again by this benchmark's report (so that two runs' figures match by name). */
function readResults(file: string): BenchResults {
  const results = JSON.parse(readFileSync(file, 'utf8')) as BenchResults;
  return { ...results, figures: figureRows(results) };
}

/** BENCHMARKS.md from a run's results: its figures (beside `spread`'s, when given), then its CLI-latency section. */
function writeBenchmarksMarkdown(file: string, results: BenchResults, spread: BenchResults | undefined): void {
  writeMarkdown(file, results, spread);
  replaceMarkdownSection(file, cliLatencyReport(results.cliLatency, cliLatencyTaken(results)).markdown);
}

function cliLatencyTaken(r: Pick<BenchResults, 'startedAt' | 'command' | 'otherLoadPercent' | 'environment'>): CliLatencyTaken {
  return { at: r.startedAt, command: r.command, otherLoadPercent: r.otherLoadPercent.phases[CLI_LATENCY_PHASE] ?? null, loadAverage: r.environment.loadAverageAtStart };
}

function cliLatencyReport(figures: CliLatencyFigures, taken: CliLatencyTaken) {
  const table = cliLatencyRows(figures);
  return { table, markdown: cliLatencyMarkdown(figures, markdownFigureTable(table), taken) };
}

function positiveInteger(text: string, flag: string): number {
  const value = Number(text.replaceAll('_', ''));
  if (!Number.isSafeInteger(value) || value <= 0) fail(`${flag} expects a positive integer, got ${JSON.stringify(text)}`);
  return value;
}

function fail(message: string): never {
  console.error(`${message}\n\n${USAGE}`);
  process.exit(2);
}

function log(line: string): void {
  process.stdout.write(`${line}\n`);
}

async function main(): Promise<void> {
  const options = parseOptions();
  if (options.render) {
    writeBenchmarksMarkdown(options.markdown!, options.render, options.spread);
    log(`${options.markdown} written from the run of ${options.render.startedAt}${options.spread ? `, beside the run of ${options.spread.startedAt}` : ''}`);
    return;
  }
  const startedAt = new Date();
  const started = performance.now();
  const phaseSeconds: Record<string, number> = {};
  /** Per phase, the percentage of the machine's CPU that other work (not the benchmark) took. */
  const phaseLoad: Record<string, number | null> = {};
  const phase = async <T>(name: string, work: () => Promise<T>): Promise<T> => {
    log(`\n== ${name}`);
    otherLoad.mark();
    const t = performance.now();
    const result = await work();
    phaseSeconds[name] = secondsSince(t);
    const other = otherLoad.mark();
    phaseLoad[name] = other === null ? null : Math.round(other * 1000) / 10;
    log(`   (${phaseSeconds[name]!.toFixed(1)} s${other === null ? '' : `; other work took ${phaseLoad[name]}% of the machine meanwhile`})`);
    return result;
  };

  if (options.build) {
    log('== npm run build (the projector is measured as the built CLI, dist/)');
    const build = spawnSync('npm', ['run', 'build'], { cwd: repoRoot, encoding: 'utf8' });
    if (build.status !== 0) throw new Error(`npm run build failed:\n${build.stdout}${build.stderr}`);
  }
  for (const entry of [cliEntry, binEntry]) if (!existsSync(entry)) throw new Error(`${entry} is missing: run npm run build (or drop --no-build)`);

  otherLoad.start();
  const server = await startPostgres();
  const stopServer = once(() => server.stop());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void stopServer().finally(() => process.exit(130));
    });
  }
  const importDirectory = path.join(os.tmpdir(), `os-audit-bench-import-${process.pid}`);
  const importStream = path.join(os.tmpdir(), `os-audit-bench-import-${process.pid}.jsonl`);
  const largeImportDirectory = path.join(os.tmpdir(), `os-audit-bench-large-import-${process.pid}`);
  const removeImportFiles = () => {
    rmSync(importDirectory, { recursive: true, force: true });
    rmSync(importStream, { force: true });
  };
  try {
    const environment = await describeEnvironment(server.adminUrl, server.source);
    log('\n== environment');
    for (const line of describeEnvironmentLines(environment)) log(`   ${line}`);
    const cliLatency = () => phase(CLI_LATENCY_PHASE, () => measureCliLatencyOnNewDatabase(server.adminUrl));
    const reportCliLatency = (figures: CliLatencyFigures) =>
      cliLatencyReport(figures, cliLatencyTaken({ startedAt: startedAt.toISOString(), command: commandLine(options), otherLoadPercent: { total: null, phases: phaseLoad }, environment }));
    if (options.only === 'cli-latency') {
      const figures = await cliLatency();
      const { table, markdown } = reportCliLatency(figures);
      log(`\n== results\n\n${textTable(table)}`);
      mkdirSync(path.dirname(options.json), { recursive: true });
      writeFileSync(options.json, `${JSON.stringify({ startedAt: startedAt.toISOString(), command: commandLine(options), environment, otherLoadPercent: phaseLoad[CLI_LATENCY_PHASE], cliLatency: figures }, null, 2)}\n`);
      log(`figures written to ${options.json}`);
      if (options.markdown) {
        replaceMarkdownSection(options.markdown, markdown);
        log(`its section written to ${options.markdown}`);
      }
      return;
    }

    // Appends: about N/10 events, in sessions of 1,000 so that a batch of 1,000 is one append.
    const appendSessions = Math.max(APPEND_WRITERS, Math.round(options.events / 10 / APPEND_SESSION_LENGTH / APPEND_WRITERS) * APPEND_WRITERS);
    const appendCorpus = makeAppendCorpus(`${SEED}/append`, appendSessions, APPEND_SESSION_LENGTH);
    const importMethods: AppendMethod[] = [
      { type: 'import', directory: importDirectory },
      { type: 'import-cli', path: importStream, cliEntry, label: 'os-audit import of one stream' },
      { type: 'import-cli', path: importDirectory, cliEntry: binEntry, label: 'os-audit import DIR, the bin' },
    ];
    const append = await phase('append: API and import against raw COPY', async () => {
      appendCorpus.stats.assertRealistic();
      log(`   corpus: ${appendCorpus.stats.describe()}; ${appendCorpus.sessions.length} sessions of ${APPEND_SESSION_LENGTH} events`);
      writeImportDirectory(appendCorpus, importDirectory);
      writeImportStream(appendCorpus, importStream);
      const methods: AppendMethod[] = [
        { type: 'copy' },
        { type: 'api', batch: 100, writers: 1 },
        { type: 'api', batch: 100, writers: APPEND_WRITERS },
        { type: 'api', batch: 100, writers: APPEND_WRITERS, withoutChain: true },
        { type: 'api', batch: 1000, writers: 1 },
        { type: 'api', batch: 1000, writers: APPEND_WRITERS },
        ...importMethods,
      ];
      return measureAppends(() => createScratchDatabase(server.adminUrl), appendCorpus, methods, options.runs, log);
    });
    if (!options.citus) removeImportFiles();

    // Issue 17's import target is for the bin on 1M events: the append corpus's sessions, as many as make N events.
    const largeImport = await phase(`import DIR: ${int(options.events)} events against raw COPY`, async () => {
      const corpus = makeAppendCorpus(`${SEED}/append`, Math.max(1, Math.round(options.events / APPEND_SESSION_LENGTH)), APPEND_SESSION_LENGTH);
      log(`   corpus: ${corpus.stats.describe()}; ${corpus.sessions.length} sessions of ${APPEND_SESSION_LENGTH} events`);
      writeImportDirectory(corpus, largeImportDirectory);
      try {
        const bin: AppendMethod = { type: 'import-cli', path: largeImportDirectory, cliEntry: binEntry, label: `os-audit import DIR of ${int(corpus.events)} events, the bin` };
        const methods: AppendMethod[] = [{ type: 'copy' }, bin, { ...bin, withoutChain: true }];
        return await measureAppends(() => createScratchDatabase(server.adminUrl), corpus, methods, options.runs, log);
      } finally {
        rmSync(largeImportDirectory, { recursive: true, force: true });
      }
    });

    const smallEvents = await phase('small events: size on disk', async () => {
      return smallEventsDiskSize(server.adminUrl, `${SEED}/small`, SMALL_EVENTS, log);
    });

    const database = await createScratchDatabase(server.adminUrl);
    otherLoad.addDatabase(database.name);
    const dropDatabase = once(() => database.drop());
    try {
      const stats = new CorpusStats();
      const disk = await phase(`catch-up corpus: generate and load ${options.events.toLocaleString('en-US')} events`, async () => {
        const corpus = new InterleavedCorpus({ seed: `${SEED}/catch-up`, prefix: 'cu', events: options.events });
        const layout = await probeEventLayout(database.db);
        log(`   rows written as EventStore.append writes them: ${layout.extraColumns.map((c, i) => `${c} = ${layout.extraValues[i]}`).join(', ') || 'no other columns'}`);
        await loadRows(database.url, layout, corpus.rows(), { onRow: (row) => stats.add(row) });
        stats.assertRealistic();
        log(`   corpus: ${stats.describe()}; ${corpus.lastSeqs.size.toLocaleString('en-US')} sessions`);
        const size: DiskSize = await diskSize(database.db, stats.bytes);
        log(`   size on disk: ${describeDiskSize(size)}`);
        return size;
      });

      const catchUp = await phase('catch-up: os-audit project --once against the set-based SQL limit', () =>
        measureCatchUp(database.url, database.db, options.events, options.runs, cliEntry, log),
      );

      const verify = await phase(`integrity: verify the hash chain of ${int(options.events)} events against sha256sum over their texts`, () =>
        measureVerify(database.db, database.url, options.runs, log),
      );

      // What every projection has folded (all of it, after the catch-up) is sealed: the live and query figures follow on the sealed log.
      const sealed = await phase('seal: os-audit seal of the folded log', () => sealedDiskSize(database.db, stats.bytes, log));
      if (sealed !== undefined) disk.sealed = sealed;

      const live = await phase('live: commit → visible in os_snapshot_json under a steady load', () =>
        measureLive(
          database.url,
          cliEntry,
          `${SEED}/live`,
          { writers: 8, eventsPerSecond: 2000, batch: 10, sessionsPerWriter: 4, warmupSeconds: 2, windowSeconds: 10, windows: options.runs },
          log,
        ),
      );

      const liveCeiling = await phase(`live: the highest steady rate with p99 ≤ ${LIVE_CEILING_P99_MS} ms`, () =>
        measureLiveCeiling(
          database.url,
          cliEntry,
          `${SEED}/live-ceiling`,
          { writers: 8, batch: 100, sessionsPerWriter: 4, warmupSeconds: 2, windowSeconds: 5, windows: 1 },
          LIVE_CEILING_RATES,
          LIVE_CEILING_P99_MS,
          log,
        ),
      );

      /** The snapshot tables grown to `sessions`, then the query among them. */
      const queryAmong = async (sessions: number, grow: GrowOptions = {}): Promise<QueryFigures> => {
        const grown = await growSnapshotTables(database.db, sessions, grow);
        const tablesBytes = await snapshotTablesSize(database.db);
        log(`   ${grown.projected.toLocaleString('en-US')} sessions grown to ${grown.total.toLocaleString('en-US')} (${grown.seconds.toFixed(1)} s), ${gib(tablesBytes)}`);
        const figures = await measureQuery(database.url, database.db, SEED, { runs: options.runs, queries: 2000, warmup: 500 });
        for (const [i, run] of figures.runs.entries()) {
          log(`  run ${i + 1}/${options.runs}: p50 ${run.p50Ms.toFixed(3)} ms, p99 ${run.p99Ms.toFixed(3)} ms, max ${run.maxMs.toFixed(3)} ms`);
        }
        return { ...figures, projectedSessions: grown.projected, tablesBytes };
      };
      const query = await phase(`query: one snapshot from os_snapshot_json among ${QUERY_SESSIONS.toLocaleString('en-US')} sessions`, () => queryAmong(QUERY_SESSIONS));
      const largeQuery = options.scaling
        ? await phase(`query: one snapshot from os_snapshot_json among ${options.largeQuerySessions.toLocaleString('en-US')} lighter sessions`, async () => ({
            ...(await queryAmong(options.largeQuerySessions, { listRowsPerCopy: LARGE_QUERY_LIST_ROWS })),
            listRowsPerCopy: LARGE_QUERY_LIST_ROWS,
          }))
        : undefined;
      await dropDatabase();
      const digest = await phase(`integrity: os-audit digest over ${int(DIGEST_SESSIONS)} sessions`, () =>
        measureDigest(server.adminUrl, { seed: `${SEED}/digest`, sessions: DIGEST_SESSIONS, sessionLength: DIGEST_SESSION_LENGTH, runs: options.runs, bin: binEntry }, log),
      );
      const backfill = await phase(`integrity: the hash chain's backfill over ${int(options.events)} events stored before it`, () =>
        measureBackfill(server.adminUrl, `${SEED}/catch-up`, options.events, log),
      );
      const cli = await cliLatency();

      const scaling = options.scaling
        ? await phase(`scaling: catch-up at ${options.scalingSizes.map((n) => n.toLocaleString('en-US')).join(', ')} events`, () =>
            measureScaling(server.adminUrl, cliEntry, SEED, options.scalingSizes, log),
          )
        : undefined;

      // The same corpora, measured the same way, on the cluster: the append corpus and its
      // import files as they are, the catch-up corpus from its seed again.
      const citus = options.citus
        ? await measureCitus({
            appendCorpus,
            methods: [{ type: 'copy' }, { type: 'api', batch: 100, writers: APPEND_WRITERS }, ...importMethods],
            catchUpSeed: `${SEED}/catch-up`,
            events: options.events,
            runs: options.runs,
            cliEntry,
            singleNodeDigest: catchUp.digest,
            phase,
            log,
          })
        : undefined;
      removeImportFiles();

      const partial = {
        startedAt: startedAt.toISOString(),
        command: commandLine(options),
        options: { events: options.events, runs: options.runs, scaling: options.scaling, citus: options.citus, appendEvents: append.corpus.events },
        environment,
        corpus: stats.toJson(),
        append,
        largeImport,
        catchUp,
        disk,
        smallEvents,
        live,
        liveCeiling,
        query,
        ...(largeQuery ? { largeQuery } : {}),
        cliLatency: cli,
        integrity: { verify, digest, backfill },
        ...(scaling ? { scaling } : {}),
        ...(citus ? { citus } : {}),
      };
      const figures = figureRows(partial);
      const total = otherLoad.total();
      const results: BenchResults = {
        ...partial,
        figures,
        totalSeconds: secondsSince(started),
        phaseSeconds,
        otherLoadPercent: { total: total === null ? null : Math.round(total * 1000) / 10, phases: phaseLoad },
      };

      log(`\n== results (medians of ${options.runs} run${options.runs === 1 ? '' : 's'})\n`);
      for (const line of describeEnvironmentLines(environment)) log(line);
      log('');
      log(textTable(figures));
      if (scaling) {
        log('\nscaling (one run at each size):\n');
        log(scalingText(scaling));
      }
      const cliReport = reportCliLatency(cli);
      log(`\ncli latency:\n\n${textTable(cliReport.table)}`);
      if (results.citus) {
        log(`\ncitus (a coordinator and ${results.citus.environment.workers} workers on this machine; medians of ${options.runs}):\n`);
        log(citusText(results));
      }
      const held = figures.filter((row) => row.holds === true).length;
      const targeted = figures.filter((row) => row.holds !== null).length;
      log(`\n${held} of ${targeted} targets hold; total run time ${(results.totalSeconds / 60).toFixed(1)} min`);
      if (total !== null) {
        log(`other work on the machine took ${results.otherLoadPercent.total}% of its CPU during the run${total > 0.05 ? ': the figures are skewed by it' : ''}`);
      }
      writeJson(options.json, results);
      log(`figures written to ${options.json}`);
      if (options.markdown) {
        writeBenchmarksMarkdown(options.markdown, results, options.spread);
        log(`table written to ${options.markdown}`);
      }
    } finally {
      await dropDatabase().catch(() => {});
    }
  } finally {
    removeImportFiles();
    otherLoad.stop();
    await stopServer();
  }
}

/**
 * The CLI-latency figure on a new database holding one sample session, imported and projected
 * with the bin itself; the database is dropped after.
 */
async function measureCliLatencyOnNewDatabase(adminUrl: string): Promise<CliLatencyFigures> {
  const database = await createScratchDatabase(adminUrl);
  otherLoad.addDatabase(database.name);
  try {
    const env = { ...process.env, DATABASE_URL: database.url };
    for (const args of [['import', path.join('samples', `${CLI_LATENCY_SESSION}.jsonl`)], ['project', '--once', '--metrics-port', 'off']]) {
      const run = spawnSync(process.execPath, [binEntry, ...args], { cwd: repoRoot, env, encoding: 'utf8' });
      if (run.status !== 0) throw new Error(`os-audit ${args.join(' ')} failed: ${run.stderr}`);
    }
    return await measureCliLatency({ url: database.url, session: CLI_LATENCY_SESSION, bin: binEntry, repoRoot, runs: CLI_LATENCY_RUNS, npxRuns: NPX_RUNS }, log);
  } finally {
    await database.drop();
  }
}

function commandLine(options: ReturnType<typeof parseOptions>): string {
  const args: string[] = [];
  if (options.events !== 1_000_000) args.push('--events', String(options.events));
  if (options.runs !== 3) args.push('--runs', String(options.runs));
  if (options.scaling) {
    const custom = options.scalingSizes.join(',') !== SCALING_SIZES.join(',');
    args.push(...(custom ? ['--scaling-sizes', options.scalingSizes.join(',')] : ['--scaling']));
  }
  if (options.citus) args.push('--citus');
  if (options.only) args.push('--only', options.only);
  if (options.markdown) args.push('--markdown', options.markdown);
  if (options.spreadFile) args.push('--spread', options.spreadFile);
  const url = process.env.DATABASE_URL ? `DATABASE_URL=${redact(process.env.DATABASE_URL)} ` : '';
  return `${url}npm run bench${args.length > 0 ? ` -- ${args.join(' ')}` : ''}`;
}

/** A connection string without its password. */
function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '<DATABASE_URL>';
  }
}

function once(work: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () => (done ??= work());
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
