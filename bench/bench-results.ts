import type { DiskSize, SmallEventsDiskSize } from './disk-size.js';
import type { Environment } from './environment.js';
import type { AppendFigures } from './measure-append.js';
import type { CatchUpFigures } from './measure-catch-up.js';
import type { CitusFigures } from './measure-citus.js';
import type { CliLatencyFigures } from './measure-cli-latency.js';
import type { BackfillFigures, DigestFigures, VerifyFigures } from './measure-integrity.js';
import type { LiveCeiling, LiveFigures } from './measure-live.js';
import type { LargeQueryFigures, QueryFigures } from './measure-query.js';
import type { ScalingPoint } from './measure-scaling.js';

/** Everything one run measured, as written to the JSON file. */
export interface BenchResults {
  startedAt: string;
  command: string;
  totalSeconds: number;
  phaseSeconds: Record<string, number>;
  /** The percentage of the machine's CPU that other work (not the benchmark) took, in all and per phase; null without /proc. */
  otherLoadPercent: { total: number | null; phases: Record<string, number | null> };
  options: { events: number; runs: number; scaling: boolean; citus?: boolean; appendEvents: number };
  environment: Environment;
  corpus: Record<string, unknown>;
  append: AppendFigures;
  /** The bin's import of a folder of session files holding as many events as the catch-up corpus, against COPY of the same rows (runs before 2026-12-05 lack it). */
  largeImport?: AppendFigures;
  catchUp: CatchUpFigures;
  disk: DiskSize;
  smallEvents: SmallEventsDiskSize;
  live: LiveFigures;
  liveCeiling: LiveCeiling;
  query: QueryFigures;
  /** With `--scaling`: the query among 10M lighter sessions. */
  largeQuery?: LargeQueryFigures;
  scaling?: ScalingPoint[];
  /** `os-audit snapshot S` against Node's start plus a round trip (its own section of BENCHMARKS.md). */
  cliLatency: CliLatencyFigures;
  /** With `--citus`: the same measurements on a local Citus cluster. */
  citus?: CitusFigures;
  /** The hash chain's verify, digest and backfill (runs before 2026-12-07 lack them). */
  integrity?: { verify: VerifyFigures; digest: DigestFigures; backfill: BackfillFigures };
  figures: FigureRow[];
}

/** One line of the table. */
export interface FigureRow {
  figure: string;
  value: string;
  limit: string;
  ratio: string;
  target: string;
  /** Whether the target holds; null where there is no target. */
  holds: boolean | null;
}
