import path from 'node:path';
import type { Kysely } from 'kysely';
import { afterEach, expect } from 'vitest';
import type { DB } from '../../src/db/schema.js';
import { type AppendUnit, readJournals } from './append-journal.js';
import { useTempDir } from './log-files.js';
import { auditStore, type StoreAudit, storeProblems, verifyWithCli } from './store-audit.js';
import { useDaemonProcesses } from './use-daemon-processes.js';
import { startWriter, type WriterConfig, type WriterProcess } from './writer-process.js';

/** True under `OS_AUDIT_LONG_FAULTS=1`: the fault tests run their long variants. */
export const LONG_FAULTS = process.env.OS_AUDIT_LONG_FAULTS === '1';

/** `normal`, or `long` under `OS_AUDIT_LONG_FAULTS=1`. */
export function scaled<T>(normal: T, long: T): T {
  return LONG_FAULTS ? long : normal;
}

/**
 * The pieces of a fault test for the calling file: daemons and writers as processes (each
 * SIGKILLed after its test if still running), journals in a temporary folder, and the final
 * check every fault test ends with.
 *
 * @example
 * ```ts
 * const run = useFaultRun();
 * const writer = run.startWriter({ name: 'fault-w1', url, api: 'event-store', sessions, appendsPerSecond: 50, batch: [1, 20] });
 * ...
 * await run.expectStoreRight(db, url);
 * ```
 */
export function useFaultRun() {
  const tempDir = useTempDir('os-audit-faults-');
  const startDaemon = useDaemonProcesses();
  let writers: WriterProcess[] = [];
  let dir: string | undefined;
  const journalUnits = () => readJournals(writers.map((writer) => writer.config.journal));
  afterEach(async () => {
    await Promise.all(writers.map((writer) => writer.kill()));
    writers = [];
    dir = undefined;
  });
  return {
    startDaemon,
    /** Starts a writer process whose journal goes to this test's folder. */
    startWriter(config: Omit<WriterConfig, 'journal'>): WriterProcess {
      dir ??= tempDir();
      const writer = startWriter({ ...config, journal: path.join(dir, `${config.name}.jsonl`) });
      writers.push(writer);
      return writer;
    },
    /** A file in this test's folder. */
    file(name: string): string {
      dir ??= tempDir();
      return path.join(dir, name);
    },
    /** The units in the journals of every writer this test started. */
    journalUnits,
    /**
     * The end of every fault test, with every writer and daemon stopped. Against the writers'
     * journals and `moreUnits` (the test's own appends), each acknowledged append is stored
     * exactly once with its text at its seq. Nothing is stored twice or in part, and no log has
     * a hole. Then `project --once` and `verify --all` (as processes) are clean.
     */
    async expectStoreRight(db: Kysely<DB>, databaseUrl: string, moreUnits: readonly AppendUnit[] = []): Promise<StoreAudit> {
      const audit = await auditStore(db, [...journalUnits(), ...moreUnits]);
      expect(storeProblems(audit)).toEqual([]);
      const { clean, project, verify } = await verifyWithCli(databaseUrl);
      expect(clean, `project --once: ${project.code} ${project.stdout}${project.stderr}\nverify --all: ${verify.code} ${verify.stdout}${verify.stderr}`).toBe(true);
      return audit;
    },
  };
}
