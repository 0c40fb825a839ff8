/**
 * Runs an SDK copy's jest suite (prepared by prepare-sdk.sh), with its own log classes or with
 * os-audit's in their place, and reads the outcome of every test from jest's `--json` report.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export type SdkVersion = '0.2.36' | '0.2.60';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '../..');

/** An SDK copy of .sdk/. */
export interface SdkCopy {
  version: SdkVersion;
  /** Its `node/` directory: the package, its tests and its node_modules. */
  nodeDir: string;
}

export function sdkCopy(version: SdkVersion): SdkCopy {
  return { version, nodeDir: path.join(repoRoot, '.sdk', version, 'node') };
}

/**
 * A test's outcome, by `file › full name` (`file › (suite)` for a file that failed to run; a
 * repeated name gets ` (2)`, ` (3)`, … in the file's order).
 */
export type Outcomes = Map<string, 'passed' | 'failed' | 'skipped'>;

export interface JestReport {
  outcomes: Outcomes;
  /** The first lines of each failed test's message, by test. */
  failures: Map<string, string>;
  seconds: number;
}

/** Where os-audit's classes go instead of the SDK's, and what they need. */
export interface Swap {
  /** A directory of the run for the shim modules and the jest config. */
  workDir: string;
  /** The database the logs write to (a migrated os-audit database). */
  databaseUrl: string;
  /** Where the workers record every append (see postgres-logs.ts). */
  recordDir: string;
  /** The built os-audit package ('os-audit' is mapped to its entry). */
  packageDir: string;
}

export interface JestRunOptions {
  /** Test paths (regular expressions, as jest takes them); default the whole suite. */
  tests?: readonly string[];
  swap?: Swap;
  /** jest's stdout and stderr go here. */
  logFile: string;
  reportFile: string;
}

/**
 * Matches every import of the module, however the SDK's files spell it (`./session-log.js`,
 * `../runtime/session-log.js`, `../../src/runtime/session-log.js`, …): relative specifiers only,
 * so the shims' own absolute imports of the real modules are left alone. Neither SDK has another
 * file of either name.
 */
function importsOf(module: string): string {
  return `^(?:\\.{1,2}/)+(?:src/)?(?:runtime/)?${module}(?:\\.js)?$`;
}

/** The shims: everything of the real module, but the log classes from postgres-logs.ts. */
function writeShims(sdk: SdkCopy, workDir: string): { sessionLog: string; kernelJournal?: string } {
  const real = (module: string) => JSON.stringify(path.join(sdk.nodeDir, 'src', 'runtime', `${module}.ts`));
  const adapters = JSON.stringify(path.join(here, 'jest', 'postgres-logs.ts'));
  const sessionLog = path.join(workDir, `session-log-${sdk.version}.mjs`);
  if (sdk.version === '0.2.36') {
    writeFileSync(
      sessionLog,
      `export * from ${real('session-log')};\n` +
        `import { postgresSessionLogsV0236 } from ${adapters};\n` +
        `export const { InMemorySessionLog, FileSessionLog } = postgresSessionLogsV0236();\n`,
    );
    return { sessionLog };
  }
  const kernelJournal = path.join(workDir, `kernel-journal-${sdk.version}.mjs`);
  writeFileSync(
    sessionLog,
    `export * from ${real('session-log')};\n` +
      `import * as journal from ${real('kernel-journal')};\n` +
      `import { postgresSessionLogsV0260 } from ${adapters};\n` +
      `export const { InMemorySessionLog, FileSessionLog } = postgresSessionLogsV0260(journal);\n`,
  );
  writeFileSync(
    kernelJournal,
    `export * from ${real('kernel-journal')};\n` +
      `import * as journal from ${real('kernel-journal')};\n` +
      `import { postgresKernelJournals } from ${adapters};\n` +
      `export const { InMemoryKernelJournal, FileKernelJournal } = postgresKernelJournals(journal);\n`,
  );
  return { sessionLog, kernelJournal };
}

/** The SDK's own jest config, and with a swap the shims mapped in, os-audit's built package and its environment. */
function jestConfig(sdk: SdkCopy, swap: Swap | undefined): Record<string, unknown> {
  const own = JSON.parse(readFileSync(path.join(sdk.nodeDir, 'jest.config.json'), 'utf8')) as {
    moduleNameMapper: Record<string, string>;
    transform: Record<string, unknown>;
  };
  // The SDK's 5 s default timeout is a timing check on its developers' machines. On a loaded
  // 2-core machine CPU-heavy tests run near it (read_result: 4.7 s with the SDK's own classes),
  // and one that awaits a database lets the timer fire where one on files would not. Both runs
  // get the same limit, so the comparison of outcomes stays fair.
  const config = { ...own, rootDir: sdk.nodeDir, testTimeout: 30_000 };
  if (swap === undefined) return config;
  const shims = writeShims(sdk, swap.workDir);
  return {
    ...config,
    testEnvironment: path.join(here, 'jest', 'postgres-environment.cjs'),
    moduleNameMapper: {
      [importsOf('session-log')]: shims.sessionLog,
      ...(shims.kernelJournal === undefined ? {} : { [importsOf('kernel-journal')]: shims.kernelJournal }),
      '^os-audit$': path.join(swap.packageDir, 'dist', 'src', 'index.js'),
      ...own.moduleNameMapper,
    },
    transform: {
      // Transpiled alone: the SDK's compiler cannot see os-audit's types (the repo's tsc checks them).
      [`^${escapeRegExp(path.join(here, 'jest'))}/.+\\.ts$`]: [
        'ts-jest',
        { useESM: true, tsconfig: { module: 'ESNext', moduleResolution: 'bundler', isolatedModules: true } },
      ],
      ...own.transform,
    },
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Runs jest on the SDK copy (two workers, the e2e tests left out as the SDK's README does). */
export async function runSdkJest(sdk: SdkCopy, options: JestRunOptions): Promise<JestReport> {
  const configFile = `${options.reportFile}.config.json`;
  writeFileSync(configFile, JSON.stringify(jestConfig(sdk, options.swap), null, 2));
  const args = [
    '--experimental-vm-modules',
    path.join(sdk.nodeDir, 'node_modules', 'jest', 'bin', 'jest.js'),
    '--config',
    configFile,
    '--ci',
    '--maxWorkers=2',
    '--testPathIgnorePatterns',
    '/e2e/',
    '--json',
    '--outputFile',
    options.reportFile,
    ...(options.tests ?? []),
  ];
  const env = {
    ...process.env,
    NODE_OPTIONS: '--no-warnings=ExperimentalWarning',
    ...(options.swap === undefined
      ? {}
      : { OS_AUDIT_SDK_DATABASE_URL: options.swap.databaseUrl, OS_AUDIT_SDK_RECORD_DIR: options.swap.recordDir }),
  };
  const started = performance.now();
  await new Promise<void>((resolve, reject) => {
    const log = createWriteStream(options.logFile);
    const child = spawn(process.execPath, args, { cwd: sdk.nodeDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pipe(log);
    child.stderr.pipe(log);
    child.on('error', reject);
    // jest exits 1 when a test fails: the report says which.
    child.on('close', () => resolve());
  });
  const seconds = (performance.now() - started) / 1000;
  return { ...readJestReport(sdk, options.reportFile, options.logFile), seconds };
}

interface JestJson {
  testResults: Array<{
    name: string;
    message: string;
    assertionResults: Array<{ fullName: string; status: string; failureMessages: string[] }>;
  }>;
}

function readJestReport(sdk: SdkCopy, reportFile: string, logFile: string): Omit<JestReport, 'seconds'> {
  let report: JestJson;
  try {
    report = JSON.parse(readFileSync(reportFile, 'utf8')) as JestJson;
  } catch {
    throw new Error(`jest wrote no report (${reportFile}); its output is in ${logFile}`);
  }
  const outcomes: Outcomes = new Map();
  const failures = new Map<string, string>();
  for (const file of report.testResults) {
    const name = path.relative(sdk.nodeDir, file.name);
    if (file.assertionResults.length === 0) {
      outcomes.set(`${name} › (suite)`, 'failed');
      failures.set(`${name} › (suite)`, firstLines(file.message));
    }
    for (const test of file.assertionResults) {
      // A name the file repeats (a table of cases with one title) is numbered in the file's order.
      const base = `${name} › ${test.fullName}`;
      let id = base;
      for (let n = 2; outcomes.has(id); n++) id = `${base} (${n})`;
      outcomes.set(id, test.status === 'passed' ? 'passed' : test.status === 'failed' ? 'failed' : 'skipped');
      if (test.status === 'failed') failures.set(id, firstLines(test.failureMessages.join('\n')));
    }
  }
  return { outcomes, failures };
}

function firstLines(message: string): string {
  // eslint-disable-next-line no-control-regex
  return message.replace(/\u001b\[[0-9;]*m/g, '').split('\n').map((line) => line.trim()).filter(Boolean).slice(0, 4).join(' | ');
}
