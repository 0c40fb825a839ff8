import { spawnSync } from 'node:child_process';
import path from 'node:path';
import pg from 'pg';
import { median, percentile } from './stats.js';

/** A command's wall times over the runs, spawn to exit. */
export interface CommandTimes {
  command: string;
  runs: number;
  medianMs: number;
  p90Ms: number;
}

/** What `npm run bench -- --only cli-latency` measures. */
export interface CliLatencyFigures {
  session: string;
  /** The bin, relative to the repository. */
  bin: string;
  /** `os-audit snapshot S` through the package's bin, against a server with the snapshot present. */
  snapshot: CommandTimes;
  /** `node -e ''`: Node's own start and exit. */
  node: CommandTimes;
  /** The snapshot's query from Node on a connection already open: one round trip. */
  queryRoundTrip: { queries: number; medianMs: number; p90Ms: number };
  /** For comparison: `os-audit --version`, and `npx os-audit snapshot S`. */
  version: CommandTimes;
  npxSnapshot: CommandTimes;
  /** median snapshot ÷ (median node + median round trip); the target is ≤ 1.5. */
  ratio: number;
}

/** Runs each of `commands` `runs` times, interleaved so that a change of load hits them alike. */
function timeCommands(commands: readonly (readonly string[])[], runs: number, cwd: string, env: NodeJS.ProcessEnv): number[][] {
  const times = commands.map((): number[] => []);
  for (let run = 0; run < runs; run++) {
    for (const [i, [file, ...args]] of commands.entries()) {
      const started = performance.now();
      const result = spawnSync(file!, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
      times[i]!.push(performance.now() - started);
      if (result.status !== 0) throw new Error(`${[file, ...args].join(' ')} failed (exit ${result.status}): ${result.stderr}`);
    }
  }
  return times;
}

function summarize(command: string, times: readonly number[]): CommandTimes {
  return { command, runs: times.length, medianMs: median(times), p90Ms: percentile(times, 90) };
}

/**
 * The CLI's latency: `bin snapshot SESSION` against the database of `url` where SESSION's snapshot
 * is stored. The bin is a real process, the way a user calls it without npx. Beside it run
 * `node -e ''` and the snapshot query's round trip from an open connection, `runs` times each
 * after a warm-up; `npx os-audit snapshot` and `--version` for comparison.
 */
export async function measureCliLatency(
  options: { url: string; session: string; bin: string; repoRoot: string; runs: number; npxRuns: number },
  log: (line: string) => void,
): Promise<CliLatencyFigures> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: options.url };
  const bin = path.relative(options.repoRoot, options.bin);
  const node = [process.execPath, '-e', ''];
  const snapshot = [process.execPath, bin, 'snapshot', options.session];
  const version = [process.execPath, bin, '--version'];
  const npx = ['npx', '--no-install', 'os-audit', 'snapshot', options.session];
  const check = spawnSync(snapshot[0]!, snapshot.slice(1), { cwd: options.repoRoot, env, encoding: 'utf8' });
  if (check.status !== 0 || !check.stdout.startsWith('{')) throw new Error(`${snapshot.join(' ')} printed no snapshot: ${check.stderr}${check.stdout}`);

  timeCommands([node, snapshot, version], 5, options.repoRoot, env);
  const [nodeTimes, snapshotTimes, versionTimes] = timeCommands([node, snapshot, version], options.runs, options.repoRoot, env);
  log(`   ${options.runs} runs each: node -e '' ${median(nodeTimes!).toFixed(1)} ms, os-audit snapshot ${median(snapshotTimes!).toFixed(1)} ms, --version ${median(versionTimes!).toFixed(1)} ms (medians)`);
  const [npxTimes] = timeCommands([npx], options.npxRuns, options.repoRoot, env);
  log(`   ${options.npxRuns} runs of npx os-audit snapshot: ${median(npxTimes!).toFixed(1)} ms (median)`);

  const roundTrips = await queryRoundTrips(options.url, options.session, options.runs * 10);
  const figures = {
    session: options.session,
    bin,
    snapshot: summarize(`os-audit snapshot ${options.session}`, snapshotTimes!),
    node: summarize("node -e ''", nodeTimes!),
    queryRoundTrip: { queries: roundTrips.length, medianMs: median(roundTrips), p90Ms: percentile(roundTrips, 90) },
    version: summarize('os-audit --version', versionTimes!),
    npxSnapshot: summarize(`npx os-audit snapshot ${options.session}`, npxTimes!),
  };
  return { ...figures, ratio: figures.snapshot.medianMs / (figures.node.medianMs + figures.queryRoundTrip.medianMs) };
}

/** The snapshot query that `os-audit snapshot` sends, timed from Node on one open connection. */
async function queryRoundTrips(url: string, session: string, queries: number): Promise<number[]> {
  const client = new pg.Client({ connectionString: url, application_name: 'os-audit-bench-cli-latency' });
  await client.connect();
  try {
    const times: number[] = [];
    for (let i = 0; i < queries + 100; i++) {
      const started = performance.now();
      await client.query('SELECT snapshot::text FROM os_snapshot_json WHERE session_id = $1', [session]);
      if (i >= 100) times.push(performance.now() - started);
    }
    return times;
  } finally {
    await client.end();
  }
}
