import { spawnSync } from 'node:child_process';
import { createWriteStream, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { builtInProjections } from '../projections/index.js';
import { backfillEventChain } from '../src/store/backfill-event-chain.js';
import { migratorOf } from '../src/db/migrate.js';
import { allMigrations } from '../src/projector/migrate-projections.js';
import type { DB } from '../src/db/schema.js';
import { verifyEventChain } from '../src/integrity/verify-event-chain.js';
import { migrateTo } from '../test/support/migrate-to.js';
import { createScratchDatabase } from '../test/support/scratch-database.js';
import { checkpointDatabase } from './checkpoint.js';
import { loadRows, probeEventLayout } from './copy-rows.js';
import { type CorpusRow, InterleavedCorpus, SessionFactory, SMALL_BODIES } from './corpus.js';
import { timedCli } from './measure-append.js';
import { otherLoad } from './other-load.js';
import { median, secondsSince } from './stats.js';

/** `verifyEventChain` over the whole log against `sha256sum` over the same stored texts, alternated. */
export interface VerifyFigures {
  events: number;
  sessions: number;
  /** Bytes of the file sha256sum reads: each event's stored text, a line each, as COPY writes it. */
  textBytes: number;
  verifySeconds: number[];
  sha256sumSeconds: number[];
  medianVerifySeconds: number;
  medianSha256sumSeconds: number;
}

/**
 * Verifies the chain of the whole log `runs` times, each run followed by `sha256sum` over a file
 * of the same events' stored texts, so that the drift of a busy machine falls on both. COPY
 * writes the file first, of `coalesce(payload_text, payload::text)`: what the chain hashes.
 */
export async function measureVerify(db: Kysely<DB>, url: string, runs: number, log: (line: string) => void): Promise<VerifyFigures> {
  const file = path.join(os.tmpdir(), `os-audit-bench-texts-${process.pid}.txt`);
  try {
    const client = new pg.Client({ connectionString: url, application_name: 'os-audit-bench-texts' });
    await client.connect();
    try {
      await pipeline(client.query(copyTo('COPY (SELECT coalesce(payload_text, payload::text) FROM session_events) TO STDOUT')), createWriteStream(file));
    } finally {
      await client.end();
    }
    const textBytes = statSync(file).size;
    await checkpointDatabase(db);
    const verifySeconds: number[] = [];
    const sha256sumSeconds: number[] = [];
    let checked = { sessions: 0, events: 0 };
    for (let run = 0; run < runs; run++) {
      let started = performance.now();
      const report = await verifyEventChain(db);
      verifySeconds.push(secondsSince(started));
      if (report.problems.length > 0) throw new Error(`verify found ${report.problems.length} broken sessions in the bench's log, e.g. ${JSON.stringify(report.problems[0])}`);
      checked = report;
      started = performance.now();
      const sum = spawnSync('sha256sum', [file], { encoding: 'utf8' });
      sha256sumSeconds.push(secondsSince(started));
      if (sum.status !== 0) throw new Error(`sha256sum failed: ${sum.error?.message ?? sum.stderr}`);
      log(`  run ${run + 1}/${runs}: verify ${verifySeconds[run]!.toFixed(2)} s, sha256sum ${sha256sumSeconds[run]!.toFixed(2)} s`);
    }
    return {
      events: checked.events,
      sessions: checked.sessions,
      textBytes,
      verifySeconds,
      sha256sumSeconds,
      medianVerifySeconds: median(verifySeconds),
      medianSha256sumSeconds: median(sha256sumSeconds),
    };
  } finally {
    rmSync(file, { force: true });
  }
}

/** `os-audit digest` over many sessions, timed from spawn to exit. */
export interface DigestFigures {
  sessions: number;
  events: number;
  seconds: number[];
  medianSeconds: number;
}

/**
 * `os-audit digest --out FILE` (the bin, start-up included) `runs` times on a database of its
 * own holding `sessions` sessions of `sessionLength` small events each, loaded with the chain
 * on. A digest reads each session's head, so its cost follows the sessions, not the events.
 */
export async function measureDigest(
  serverUrl: string,
  options: { seed: string; sessions: number; sessionLength: number; runs: number; bin: string },
  log: (line: string) => void,
): Promise<DigestFigures> {
  const scratch = await createScratchDatabase(serverUrl);
  otherLoad.addDatabase(scratch.name);
  const file = path.join(os.tmpdir(), `os-audit-bench-digest-${process.pid}.json`);
  try {
    const factory = new SessionFactory({ seed: options.seed, prefix: 'dg', bodyBytes: SMALL_BODIES });
    function* rows(): Generator<CorpusRow> {
      for (let i = 0; i < options.sessions; i++) {
        const script = factory.session(options.sessionLength);
        while (!script.done) yield script.next();
      }
    }
    const events = await loadRows(scratch.url, await probeEventLayout(scratch.db), rows());
    log(`   ${options.sessions.toLocaleString('en-US')} sessions of ${options.sessionLength} small events loaded`);
    const seconds: number[] = [];
    for (let run = 0; run < options.runs; run++) {
      seconds.push((await timedCli(options.bin, ['digest', '--out', file], scratch.url)).seconds);
      const body = JSON.parse(readFileSync(file, 'utf8').split('\n')[0]!) as { sessions: number; events: number };
      if (body.sessions !== options.sessions || body.events !== events) throw new Error(`the digest covers ${body.sessions} sessions and ${body.events} events, not ${options.sessions} and ${events}`);
      log(`  run ${run + 1}/${options.runs}: ${seconds[run]!.toFixed(2)} s`);
    }
    return { sessions: options.sessions, events, seconds, medianSeconds: median(seconds) };
  } finally {
    rmSync(file, { force: true });
    await scratch.drop();
  }
}

/** The chain's backfill over events stored before it. */
export interface BackfillFigures {
  events: number;
  sessions: number;
  /** The migrations from 0016-sealed-history on, before the backfill. */
  migrateSeconds: number;
  /** `backfillEventChain` alone. */
  seconds: number;
}

/**
 * The catch-up corpus's `events` events stored (as `loadRows` stores them) in a database
 * migrated to 0016-sealed-history, the last migration before the chain; then the later
 * migrations, and `backfillEventChain`, which `os-audit migrate` runs after them, timed alone.
 * Once, for the loading takes longer than the backfill.
 */
export async function measureBackfill(serverUrl: string, seed: string, events: number, log: (line: string) => void): Promise<BackfillFigures> {
  const scratch = await createScratchDatabase(serverUrl, { migrate: false });
  otherLoad.addDatabase(scratch.name);
  try {
    await migrateTo(scratch.db, '0016-sealed-history');
    const corpus = new InterleavedCorpus({ seed, prefix: 'cu', events });
    await loadRows(scratch.url, await probeEventLayout(scratch.db), corpus.rows());
    let started = performance.now();
    const { error } = await migratorOf(scratch.db, allMigrations(builtInProjections)).migrateToLatest();
    if (error) throw error;
    const migrateSeconds = secondsSince(started);
    await checkpointDatabase(scratch.db);
    started = performance.now();
    const progress = await backfillEventChain(scratch.db);
    const seconds = secondsSince(started);
    const { rows } = await sql<{ unchained: number }>`SELECT count(*)::int AS unchained FROM sessions WHERE head_hash IS NULL`.execute(scratch.db);
    if (progress.chainedEvents !== events || rows[0]!.unchained !== 0) {
      throw new Error(`the backfill chained ${progress.chainedEvents} of ${events} events and left ${rows[0]!.unchained} sessions unchained`);
    }
    log(`   ${events.toLocaleString('en-US')} events of ${corpus.lastSeqs.size.toLocaleString('en-US')} sessions: migrations ${migrateSeconds.toFixed(1)} s, backfill ${seconds.toFixed(1)} s`);
    return { events, sessions: corpus.lastSeqs.size, migrateSeconds, seconds };
  } finally {
    await scratch.drop();
  }
}
