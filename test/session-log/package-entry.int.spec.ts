import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as api from '../../src/index.js';
import { installBuiltPackage, typescriptCompiler as tscEntry } from '../support/built-package.js';
import { useTestDatabase } from '../support/test-database.js';

/**
 * The package as a user gets it: built as `npm run build` builds it (into a copy, so that the
 * repository's own `dist/` is not involved), installed in an application's `node_modules`,
 * and imported by its name, in JavaScript and in TypeScript.
 */
const testDb = useTestDatabase();
const run = promisify(execFile);


/** The exports a user reaches through `import … from 'os-audit'`. */
const expectedExports = [
  'CheckpointMovedError',
  'ConcurrencyError',
  'ConnectionLostError',
  'CorruptEventError',
  'DEFAULT_CONNECTION_RETRY',
  'DEFAULT_MAX_EVENT_BYTES',
  'DEFAULT_MAX_SESSION_ID_BYTES',
  'DiskFullError',
  'EventStore',
  'EventValidationError',
  'FieldRead',
  'InvalidEventError',
  'JournalCasConflictError',
  'JournalIntegrityError',
  'JournalIoError',
  'JsonFloat',
  'JsonParseError',
  'KERNEL_PRIMITIVES_V0_2_36',
  'KERNEL_PRIMITIVES_V0_2_60',
  'LeaseLostError',
  'MAX_CHAIN_POSITION',
  'MigrationError',
  'OS_SNAPSHOT_PROJECTION',
  'PostgresKernelJournal',
  'PostgresSessionLog',
  'ProjectionSpec',
  'ProjectionSpecRun',
  'Projector',
  'builtInProjections',
  'canonicalOsSnapshot',
  'defineEventReads',
  'defineProjection',
  'emptyOsSnapshot',
  'encodeEventText',
  'encodeEventValue',
  'encodeSdkEvent',
  'eventBatchOf',
  'field',
  'foldEvents',
  'foldOsSnapshot',
  'foldStoredLog',
  'foldStoredOsSnapshot',
  'foldWholeLogSql',
  'hasInMemoryFold',
  'isConnectionLoss',
  'isDiskFull',
  'isJsonObject',
  'migrateToLatest',
  'openDatabase',
  'osSnapshotProjection',
  'parseJson',
  'parseOsSnapshot',
  'plannedOnceSnapshotView',
  'projectionHalt',
  'readEvent',
  'readEventLogLayout',
  'readProjectionStatus',
  'readSqlOsSnapshot',
  'readStoredSnapshot',
  'rebuildProjection',
  'retryOnConnectionLoss',
  'sealEventLog',
  'serializeOsSnapshot',
  'sql',
  'storedLogReader',
  'stringifyJson',
  'validateEvent',
  'verifyAgainstFolder',
  'verifyOsSnapshots',
  'verifyProjection',
];

const consumerJs = `
import { createRequire } from 'node:module';
import * as api from 'os-audit';
import { foldOsSnapshot, PostgresSessionLog, stringifyJson } from 'os-audit';

const log = PostgresSessionLog.connect({ connectionString: process.argv[2], values: 'exact' });
try {
  await log.append('package-entry', { kind: 'run_terminal', reason: 'done', turns_used: 1, total_tokens: 18446744073709551615n });
  await log.append('package-entry', { kind: 'suspended', turn: 2, reason: 'ask_user', pending_calls: ['c1'] });
  const entries = await log.read('package-entry');
  const snapshot = foldOsSnapshot(entries.map(({ event }) => event));
  const deepImport = await import('os-audit/dist/src/store/event-store.js').then(() => 'resolved', (error) => error.code);
  const packageName = createRequire(import.meta.url)('os-audit/package.json').name;
  console.log(stringifyJson({ names: Object.keys(api).sort(), entries, lastSuspend: snapshot.last_suspend, deepImport, packageName }));
} finally {
  await log.close();
}
`;

const consumerTs = `
import { type OsSnapshot, PostgresSessionLog, type SessionLog, type SessionLogEntry, foldOsSnapshot } from 'os-audit';

// The runtime SDK's interface, as it declares it: events a union tagged by kind.
type SdkEvent =
  | { kind: 'run_started'; run_id: string; goal: string; criteria: string[] }
  | { kind: 'page_in'; turn: number; entry_count: number };
interface SdkSessionLog {
  append(sessionId: string, event: SdkEvent): Promise<number>;
  read(sessionId: string, fromSeq?: number, primitiveFilter?: 'syscall' | 'sched' | 'mm'): Promise<Array<{ seq: number; event: SdkEvent }>>;
  latestSeq(sessionId: string): Promise<number>;
}

export async function replay(connectionString: string): Promise<OsSnapshot> {
  // A drop-in: assignable to the SDK's interface without a cast, untyped or typed.
  const untyped: SdkSessionLog = PostgresSessionLog.connect({ connectionString });
  const typed: SdkSessionLog = PostgresSessionLog.connect<SdkEvent>({ connectionString });
  // @ts-expect-error a typed log takes only the events of its type
  await typed.append('s', { kind: 'page_in', turn: 'one' });
  void untyped;

  const log: SessionLog = PostgresSessionLog.connect({ connectionString, values: 'exact' });
  const seq: number = await log.append('s', { kind: 'page_in', turn: 1, entry_count: 2, big: 18446744073709551615n });
  const entries: SessionLogEntry[] = await log.read('s', seq, 'mm');
  const total: unknown = entries[0]?.event.big;
  void total;
  // @ts-expect-error an event is an object with a kind
  await log.append('s', 'not an event');
  return foldOsSnapshot(entries.map(({ event }) => event));
}
`;

let app: string;
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'os-audit-package-'));
  ({ app } = await installBuiltPackage(scratch));
  await writeFile(path.join(app, 'package.json'), JSON.stringify({ name: 'app', type: 'module', private: true }));
  await writeFile(path.join(app, 'consumer.mjs'), consumerJs);
  await writeFile(path.join(app, 'consumer.ts'), consumerTs);
  await writeFile(
    path.join(app, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, noEmit: true, skipLibCheck: true, types: [] },
      files: ['consumer.ts'],
    }),
  );
});

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe("the package entry ('os-audit')", () => {
  it('exports the public API from the source entry', () => {
    expect(Object.keys(api).sort()).toEqual(expectedExports);
  });

  it('resolves by name from an application, runs against PostgreSQL, and hides the internals', async () => {
    const { stdout } = await run(process.execPath, ['consumer.mjs', testDb.url], { cwd: app });
    const result = api.parseJson(stdout) as api.JsonObject;
    expect(result.names).toEqual(expectedExports);
    expect(result.entries).toEqual([
      { seq: 0, event: { kind: 'run_terminal', reason: 'done', turns_used: 1, total_tokens: 18446744073709551615n } },
      { seq: 1, event: { kind: 'suspended', turn: 2, reason: 'ask_user', pending_calls: ['c1'] } },
    ]);
    expect(result.lastSuspend).toEqual({ turn: 2, reason: 'ask_user', pending_calls: ['c1'] });
    expect(result.deepImport).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED');
    expect(result.packageName).toBe('os-audit');
  });

  it('gives TypeScript users its declarations', async () => {
    const check = run(process.execPath, [tscEntry, '-p', path.join(app, 'tsconfig.json')], { cwd: app });
    await expect(check.catch((error: { stdout?: string }) => Promise.reject(new Error(error.stdout)))).resolves.toBeDefined();
  });
});
