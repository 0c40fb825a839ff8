/**
 * Conformance of os-audit's PostgresSessionLog and PostgresKernelJournal with the deepstrike
 * SDK, against the real SDK (prepared in .sdk/ by scripts/sdk/prepare-sdk.sh) and a real
 * PostgreSQL server (`DATABASE_URL`, a superuser: the runner creates and drops its databases).
 *
 *   a. the SDK's own session-log (and kernel-journal) tests, at 0.2.36 and v0.2.60, with its
 *      log classes swapped for os-audit's;
 *   b. the whole v0.2.60 jest suite with its own classes and swapped: every test that passes
 *      with the SDK's classes passes swapped, or test/sdk/known-differences.json says why not;
 *   c. every append of the swapped runs is stored exactly; the projector folds them, and
 *      `verify --all` is clean. Each session's SQL snapshot equals the seed SDK's
 *      `rebuildOsSnapshotFromSessionEvents` of its stored events. Its v0.2.60 snapshot
 *      (`os_snapshot_v0_2_60`, projected too) equals the in-memory fold and the v0.2.60 SDK's own;
 *   d. the v0.2.60 runtime with a scripted model on FileSessionLog and on PostgresSessionLog
 *      gives the same events and statuses; the files imported with `os-audit import` project
 *      to the seed's rebuild (and the v0.2.60 SDK's) too.
 *
 * Run: `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx scripts/sdk/run-sdk-conformance.ts`
 * (after `bash scripts/sdk/prepare-sdk.sh`; it builds os-audit itself). Prints a summary; exits 1
 * on any difference that known-differences.json does not explain.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createScratchDatabase, type ScratchDatabase } from '../../test/support/scratch-database.js';
import type { SdkV0260Fold } from '../../test/support/v0-2-60-sdk-fold.js';
import { type JestReport, type Outcomes, repoRoot, runSdkJest, type SdkVersion, sdkCopy, type Swap } from './sdk-jest.js';
import { compareRuns, countEvents, loadSdk, runOnFiles, runOnPostgres } from './scripted-runs.js';
import {
  checkRecordedAppends,
  compareV0260WithSdk,
  compareWithSeed,
  loadSeedRebuild,
  loadV0260Rebuild,
  projectAndVerify,
  type SeedRebuild,
} from './stored-sessions.js';

const run = promisify(execFile);

/** Tests that pass with the SDK's classes and not with os-audit's, each with the reason, per SDK version. */
const knownDifferencesFile = path.join(repoRoot, 'test', 'sdk', 'known-differences.json');
type KnownDifferences = Record<SdkVersion, Record<string, string>>;

/** The SDK's own tests of its log classes. */
const logTestFiles = ['tests/runtime/session-log.test.ts', 'tests/runtime/kernel-journal.test.ts'];

/** What went wrong, for the exit code; the summary says the rest. */
const problems: string[] = [];

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

function fail(problem: string): void {
  problems.push(problem);
}

function seconds(started: number): string {
  return `${((performance.now() - started) / 1000).toFixed(1)} s`;
}

function checkPrerequisites(): string {
  const adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) throw new Error('DATABASE_URL must name a PostgreSQL server (a superuser connection): the runner creates and drops its own databases');
  for (const version of ['0.2.36', '0.2.60'] as const) {
    if (!existsSync(path.join(repoRoot, '.sdk', version, '.prepared'))) throw new Error(`the SDK ${version} is not prepared: run bash scripts/sdk/prepare-sdk.sh`);
  }
  return adminUrl;
}

/**
 * os-audit built from the working tree as `npm run build` builds it, into a package of the run
 * (its package.json, the repository's node_modules): the SDK and the CLI use the code at hand,
 * never a stale dist/.
 */
async function buildOsAudit(workDir: string): Promise<string> {
  const packageDir = path.join(workDir, 'os-audit');
  mkdirSync(packageDir);
  copyFileSync(path.join(repoRoot, 'package.json'), path.join(packageDir, 'package.json'));
  symlinkSync(path.join(repoRoot, 'node_modules'), path.join(packageDir, 'node_modules'));
  const tsc = path.join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
  await run(process.execPath, [tsc, '-p', path.join(repoRoot, 'tsconfig.build.json'), '--outDir', path.join(packageDir, 'dist')]);
  return packageDir;
}

// ---------------------------------------------------------------------------------------------
// a and b: the SDK's tests

/**
 * The tests that pass with the SDK's own classes (`own`; every test of `swapped` when absent)
 * and do not pass, or do not run, with os-audit's.
 */
function regressions(swapped: Outcomes, own: Outcomes | undefined): string[] {
  const expected = [...(own ?? swapped)].filter(([, outcome]) => own === undefined || outcome === 'passed').map(([test]) => test);
  return expected.filter((test) => swapped.get(test) !== 'passed');
}

/**
 * Fails on every regression the known differences do not list, and on every listed test that
 * now passes (the list stays exact).
 */
function judgeRegressions(version: SdkVersion, found: string[], swapped: JestReport, known: Record<string, string>): void {
  for (const test of found) {
    if (known[test] === undefined) fail(`SDK ${version}: "${test}" passes with the SDK's classes, not with os-audit's: ${swapped.failures.get(test) ?? swapped.outcomes.get(test)}`);
  }
  for (const test of Object.keys(known)) {
    if (!found.includes(test)) fail(`SDK ${version}: "${test}" is listed in known-differences.json but is no longer a difference: remove it`);
  }
}

/** The SDK's log tests of a run, each said with its outcome; their counts. */
function sayLogTests(report: JestReport, known: Record<string, string>): { passed: number; failed: number } {
  const tests = [...report.outcomes].filter(([test]) => logTestFiles.some((file) => test.startsWith(`${file} ›`)));
  for (const [test, outcome] of tests) {
    say(`     ${outcome === 'passed' ? 'pass' : `${outcome}${known[test] === undefined ? '' : ' (known difference)'}`}  ${test}`);
  }
  const passed = tests.filter(([, outcome]) => outcome === 'passed').length;
  return { passed, failed: tests.length - passed };
}

async function runSdkTests(workDir: string, swap: Swap, known: KnownDifferences): Promise<void> {
  const seed = sdkCopy('0.2.36');
  const seedSwapped = await runSdkJest(seed, {
    tests: ['tests/runtime/session-log'],
    swap,
    logFile: path.join(workDir, 'jest-0.2.36-swapped.log'),
    reportFile: path.join(workDir, 'jest-0.2.36-swapped.json'),
  });
  say(`a. SDK 0.2.36 session-log tests on PostgreSQL (${seedSwapped.seconds.toFixed(1)} s):`);
  const seedLogTests = sayLogTests(seedSwapped, known['0.2.36']);
  say(`   ${seedLogTests.passed} passed, ${seedLogTests.failed} failed`);
  judgeRegressions('0.2.36', regressions(seedSwapped.outcomes, undefined), seedSwapped, known['0.2.36']);

  const latest = sdkCopy('0.2.60');
  const own = await runSdkJest(latest, { logFile: path.join(workDir, 'jest-0.2.60-own.log'), reportFile: path.join(workDir, 'jest-0.2.60-own.json') });
  const swapped = await runSdkJest(latest, {
    swap,
    logFile: path.join(workDir, 'jest-0.2.60-swapped.log'),
    reportFile: path.join(workDir, 'jest-0.2.60-swapped.json'),
  });
  say('a. SDK v0.2.60 session-log and kernel-journal tests on PostgreSQL (in the swapped suite below):');
  const latestLogTests = sayLogTests(swapped, known['0.2.60']);
  say(`   ${latestLogTests.passed} passed, ${latestLogTests.failed} failed`);
  const found = regressions(swapped.outcomes, own.outcomes);
  judgeRegressions('0.2.60', found, swapped, known['0.2.60']);
  const count = (report: JestReport, outcome: string) => [...report.outcomes.values()].filter((value) => value === outcome).length;
  const failingBoth = [...own.outcomes].filter(([test, outcome]) => outcome !== 'passed' && swapped.outcomes.get(test) !== 'passed').length;
  const onlySwapped = [...swapped.outcomes.keys()].filter((test) => !own.outcomes.has(test));
  for (const test of onlySwapped) say(`   only in the swapped run: ${test} (${swapped.outcomes.get(test)})`);
  say(
    `b. SDK v0.2.60 suite: ${count(own, 'passed')} of ${own.outcomes.size} pass with its own classes (${own.seconds.toFixed(1)} s), ` +
      `${count(swapped, 'passed')} of ${swapped.outcomes.size} with os-audit's (${swapped.seconds.toFixed(1)} s); ` +
      `${found.length} differ, ${found.filter((test) => known['0.2.60'][test] !== undefined).length} of them known; ${failingBoth} fail with both`,
  );
}

// ---------------------------------------------------------------------------------------------
// c and d: what was stored

/** The SDKs' own folds the snapshots are compared with. */
interface Rebuilds {
  seed: SeedRebuild;
  v0260: SdkV0260Fold;
}

/** Projects `db`, verifies it, compares it with the seed's rebuild, and its v0.2.60 snapshot with the v0.2.60 SDK's; says it under `label`. */
async function checkSnapshots(label: string, database: ScratchDatabase, rebuilds: Rebuilds): Promise<void> {
  const projection = await projectAndVerify(database.db);
  const seed = await compareWithSeed(database.db, rebuilds.seed);
  for (const mismatch of projection.mismatches) fail(`${label}: verify: ${mismatch}`);
  if (projection.pending > 0) fail(`${label}: ${projection.pending} sessions not projected`);
  for (const difference of seed.differences) fail(`${label}: seed rebuild: ${difference}`);
  say(
    `   ${label}: projected ${projection.eventsProjected} events; verify --all: ${projection.verified} sessions, ${projection.mismatches.length} mismatches; ` +
      `seed rebuild: ${seed.equalWhole} sessions equal on the whole log, ${seed.equalPrefix} on the prefix before an unreadable event, ${seed.differences.length} differ`,
  );
  for (const stop of seed.stops) say(`     stopped: ${stop}`);
  const latest = await compareV0260WithSdk(database.db, rebuilds.v0260);
  for (const difference of latest.differences) fail(`${label}: os_snapshot_v0_2_60: ${difference}`);
  say(
    `   ${label}: os_snapshot_v0_2_60 projected ${latest.eventsProjected} events; equal to its in-memory fold and to the v0.2.60 SDK's rebuild: ` +
      `${latest.equalWhole} sessions on the whole log, ${latest.equalPrefix} on the prefix before an unreadable event; ${latest.differences.length} differ ` +
      `(rows: ${latest.rows})`,
  );
  for (const stop of latest.stops) say(`     stopped: ${stop}`);
}

async function checkSuiteDatabase(database: ScratchDatabase, recordDir: string, rebuilds: Rebuilds): Promise<void> {
  const stored = await checkRecordedAppends(database.db, recordDir);
  for (const refused of stored.refused) fail(`an append was refused: ${refused.session}: ${refused.error} (${refused.text})`);
  for (const difference of stored.differences) fail(`stored events: ${difference}`);
  say(
    `c. the swapped runs appended ${stored.appends} events to ${stored.sessions} sessions: ${stored.storedExactly} stored exactly, ` +
      `${stored.refused.length} refused, ${stored.differences.length} differences`,
  );
  await checkSnapshots('the swapped runs', database, rebuilds);
}

/** Runs the CLI of the built package. */
async function osAudit(packageDir: string, databaseUrl: string, ...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [path.join(packageDir, 'dist', 'src', 'cli', 'main.js'), '--database-url', databaseUrl, ...args]);
  return stdout.trim();
}

async function runScripted(workDir: string, packageDir: string, adminUrl: string, rebuilds: Rebuilds, databases: ScratchDatabase[]): Promise<void> {
  const sdk = await loadSdk();
  const filesDir = path.join(workDir, 'scripted-files');
  const onFiles = await runOnFiles(sdk, filesDir);
  const postgres = await createScratchDatabase(adminUrl);
  databases.push(postgres);
  const onPostgres = await runOnPostgres(sdk, postgres.url);
  const differences = compareRuns(onFiles, onPostgres);
  for (const difference of differences) fail(`scripted runs: ${difference}`);
  say(
    `d. scripted v0.2.60 runs: ${onFiles.statuses.size} scenarios, ${onFiles.sessions.size} sessions, ${countEvents(onFiles)} events on files, ` +
      `${countEvents(onPostgres)} on PostgreSQL; ${differences.length} differences (events and statuses, run_id aside)`,
  );
  await checkSnapshots('the scripted runs on PostgreSQL', postgres, rebuilds);

  const imported = await createScratchDatabase(adminUrl);
  databases.push(imported);
  say(`   os-audit import of the files: ${await osAudit(packageDir, imported.url, 'import', filesDir)}`);
  await checkSnapshots('the imported files', imported, rebuilds);
  const verified = await osAudit(packageDir, imported.url, 'verify', '--all').catch((error: { stdout?: string; message: string }) => {
    fail(`os-audit verify --all of the imported files failed: ${error.stdout ?? error.message}`);
    return '';
  });
  say(`   os-audit verify --all: ${verified.split('\n').at(-1)}`);
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const adminUrl = checkPrerequisites();
  const known = JSON.parse(readFileSync(knownDifferencesFile, 'utf8')) as KnownDifferences;
  const workDir = mkdtempSync(path.join(tmpdir(), 'os-audit-sdk-'));
  const recordDir = path.join(workDir, 'appends');
  mkdirSync(recordDir);
  const databases: ScratchDatabase[] = [];
  const started = performance.now();
  try {
    const packageDir = await buildOsAudit(workDir);
    const suite = await createScratchDatabase(adminUrl);
    databases.push(suite);
    const swap: Swap = { workDir, databaseUrl: suite.url, recordDir, packageDir };
    const rebuilds: Rebuilds = { seed: await loadSeedRebuild(), v0260: await loadV0260Rebuild() };

    let partStarted = performance.now();
    await runSdkTests(workDir, swap, known);
    say(`   (a and b: ${seconds(partStarted)})`);
    partStarted = performance.now();
    await checkSuiteDatabase(suite, recordDir, rebuilds);
    say(`   (c: ${seconds(partStarted)})`);
    partStarted = performance.now();
    await runScripted(workDir, packageDir, adminUrl, rebuilds, databases);
    say(`   (d: ${seconds(partStarted)})`);
  } finally {
    await Promise.all(databases.map((database) => database.drop()));
  }
  if (problems.length === 0) {
    rmSync(workDir, { recursive: true, force: true });
    say(`SDK conformance: no unexplained difference (${seconds(started)})`);
    return;
  }
  say(`SDK conformance: ${problems.length} unexplained differences (jest reports and logs kept in ${workDir}):`);
  for (const problem of problems) say(`  - ${problem}`);
  process.exitCode = 1;
}

await main();
