/**
 * os-audit's PostgreSQL log in place of the deepstrike SDK's own log classes, for the SDK's jest
 * suite (scripts/sdk/run-sdk-conformance.ts writes the shims that load this module in place of
 * `runtime/session-log` and `runtime/kernel-journal`; 'os-audit' is mapped to the built package).
 *
 * Isolation: every SDK log instance lives in one database of the run, under a namespace that
 * prefixes its session ids and kernel operation ids (`<namespace>/<id>`):
 * - `new InMemorySessionLog()` and `new InMemoryKernelJournal()`: a fresh namespace each, as each
 *   of the SDK's instances starts empty;
 * - `new FileSessionLog(dir)` and `new FileKernelJournal(dir)`: a namespace named after the
 *   directory's absolute path, so a log reopened on the same directory sees what was written, and
 *   a `FileSessionLog(dir)`'s journal is `FileKernelJournal(dir/kernel-journal)`, as in the SDK.
 * The prefix is the only thing added: appends, reads and journal calls go to `PostgresSessionLog`
 * and `PostgresKernelJournal` as the SDK made them, and their answers go back unchanged.
 *
 * Each append is recorded (session, seq, the JSON text the SDK handed over) in a file per worker,
 * so that the runner can prove afterwards that every event is stored exactly.
 */
import { createHash, randomUUID } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import type { Kysely } from 'kysely';
import {
  type DB,
  type JournalErrorClasses,
  KERNEL_PRIMITIVES_V0_2_36,
  KERNEL_PRIMITIVES_V0_2_60,
  type KernelPrimitive,
  type KernelPrimitiveKinds,
  openDatabase,
  PostgresKernelJournal,
  PostgresSessionLog,
} from 'os-audit';

/** The environment the runner hands the jest workers. */
const settings = {
  databaseUrl: requiredEnv('OS_AUDIT_SDK_DATABASE_URL'),
  /** Where each worker writes its appends, one JSON line each; unset: nothing is recorded. */
  recordDir: process.env.OS_AUDIT_SDK_RECORD_DIR,
};

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: the SDK suite runs with os-audit's logs only through scripts/sdk/run-sdk-conformance.ts`);
  return value;
}

// ---------------------------------------------------------------------------------------------
// One pool per test file

/**
 * Jest evaluates this module once per test file, so this is the file's pool. It opens on the
 * first query: pg connects lazily, which lets the SDK construct its logs synchronously. The test
 * environment's teardown (postgres-environment.cjs) ends it, after the file's last hook.
 */
let database: Kysely<DB> | undefined;

function sharedDatabase(): Kysely<DB> {
  database ??= openDatabase({ connectionString: settings.databaseUrl, maxConnections: 4, applicationName: 'os-audit-sdk-conformance' });
  return database;
}

async function closeSharedDatabase(): Promise<void> {
  const db = database;
  database = undefined;
  await db?.destroy();
}

(globalThis as { __osAuditSdkLogs?: { close(): Promise<void> } }).__osAuditSdkLogs = { close: closeSharedDatabase };

// ---------------------------------------------------------------------------------------------
// Namespaces

function freshNamespace(): string {
  return `mem-${randomUUID()}`;
}

/** Named after the path's hash: it holds no `/`, so `<namespace>/<id>` never collides across namespaces. */
function directoryNamespace(dir: string): string {
  return `dir-${createHash('sha256').update(path.resolve(dir)).digest('hex').slice(0, 20)}`;
}

function scoped(namespace: string, id: string): string {
  return `${namespace}/${id}`;
}

// ---------------------------------------------------------------------------------------------
// The recording of appends

/** One append the SDK made: stored at `seq`, or refused with `error`. */
export interface RecordedAppend {
  session: string;
  /** `JSON.stringify` of the event when it was handed over; absent when that throws. */
  text?: string;
  seq?: number;
  error?: string;
}

function record(append: RecordedAppend): void {
  if (settings.recordDir === undefined) return;
  appendFileSync(path.join(settings.recordDir, `${process.pid}.jsonl`), `${JSON.stringify(append)}\n`);
}

function stringifyOrUndefined(event: unknown): string | undefined {
  try {
    return JSON.stringify(event);
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// The classes

type Event = { kind: string };

/** A `PostgresSessionLog` seen through a namespace. */
export class NamespacedSessionLog {
  private readonly log: PostgresSessionLog;

  constructor(
    private readonly namespace: string,
    primitives: KernelPrimitiveKinds,
  ) {
    this.log = new PostgresSessionLog(sharedDatabase(), { primitives });
  }

  async append(sessionId: string, event: Event): Promise<number> {
    const session = scoped(this.namespace, sessionId);
    // Taken now: the SDK may change the object after the call, and the log stores it as it is now.
    const text = stringifyOrUndefined(event);
    try {
      const seq = await this.log.append(session, event);
      record({ session, text, seq });
      return seq;
    } catch (error) {
      record({ session, text, error: (error as Error).message });
      throw error;
    }
  }

  read(sessionId: string, fromSeq?: number, primitiveFilter?: KernelPrimitive) {
    return this.log.read(scoped(this.namespace, sessionId), fromSeq, primitiveFilter);
  }

  latestSeq(sessionId: string): Promise<number> {
    return this.log.latestSeq(scoped(this.namespace, sessionId));
  }
}

/** The journal's public methods (the class itself has private members, which no other class can implement). */
type JournalMethods = Pick<PostgresKernelJournal, keyof PostgresKernelJournal>;

/** A `PostgresKernelJournal` seen through a namespace, throwing the SDK's error classes. */
export class NamespacedKernelJournal implements JournalMethods {
  private readonly journal: PostgresKernelJournal;

  constructor(
    private readonly namespace: string,
    errors: JournalErrorClasses,
  ) {
    this.journal = new PostgresKernelJournal(sharedDatabase(), { errors });
  }

  private op(operationId: string): string {
    return scoped(this.namespace, operationId);
  }

  compareAndAppend(...[operationId, ...rest]: Parameters<JournalMethods['compareAndAppend']>) {
    return this.journal.compareAndAppend(this.op(operationId), ...rest);
  }
  head(operationId: string) {
    return this.journal.head(this.op(operationId));
  }
  readFrom(...[operationId, ...rest]: Parameters<JournalMethods['readFrom']>) {
    return this.journal.readFrom(this.op(operationId), ...rest);
  }
  recordsAfter(...[operationId, ...rest]: Parameters<JournalMethods['recordsAfter']>) {
    return this.journal.recordsAfter(this.op(operationId), ...rest);
  }
  compareAndInstallCheckpoint(...[operationId, ...rest]: Parameters<JournalMethods['compareAndInstallCheckpoint']>) {
    return this.journal.compareAndInstallCheckpoint(this.op(operationId), ...rest);
  }
  latestCheckpoint(operationId: string) {
    return this.journal.latestCheckpoint(this.op(operationId));
  }
  ackCheckpoint(...[operationId, ...rest]: Parameters<JournalMethods['ackCheckpoint']>) {
    return this.journal.ackCheckpoint(this.op(operationId), ...rest);
  }
  pruneAckedPrefix(operationId: string) {
    return this.journal.pruneAckedPrefix(this.op(operationId));
  }
  stageOutboundEnvelope(...[operationId, ...rest]: Parameters<JournalMethods['stageOutboundEnvelope']>) {
    return this.journal.stageOutboundEnvelope(this.op(operationId), ...rest);
  }
  readOutboundEnvelope(operationId: string) {
    return this.journal.readOutboundEnvelope(this.op(operationId));
  }
  clearOutboundEnvelope(operationId: string) {
    return this.journal.clearOutboundEnvelope(this.op(operationId));
  }
}

/** A session log with the kernel journal v0.2.60's logs hold. */
export class JournaledSessionLog extends NamespacedSessionLog {
  constructor(
    namespace: string,
    readonly kernelJournal: NamespacedKernelJournal,
  ) {
    super(namespace, KERNEL_PRIMITIVES_V0_2_60);
  }
}

export interface KernelJournalClasses {
  InMemoryKernelJournal: new () => NamespacedKernelJournal;
  FileKernelJournal: new (dir: string) => NamespacedKernelJournal;
}

/** The SDK's `InMemoryKernelJournal` and `FileKernelJournal` (v0.2.60), on PostgreSQL, throwing the SDK's `errors`. */
export function postgresKernelJournals(errors: JournalErrorClasses): KernelJournalClasses {
  return {
    InMemoryKernelJournal: class InMemoryKernelJournal extends NamespacedKernelJournal {
      constructor() {
        super(freshNamespace(), errors);
      }
    },
    FileKernelJournal: class FileKernelJournal extends NamespacedKernelJournal {
      constructor(dir: string) {
        super(directoryNamespace(dir), errors);
      }
    },
  };
}

export interface SessionLogClasses<Log> {
  InMemorySessionLog: new () => Log;
  FileSessionLog: new (dir: string) => Log;
}

/** The SDK's `InMemorySessionLog` and `FileSessionLog` at 0.2.36 (logs without a journal), on PostgreSQL. */
export function postgresSessionLogsV0236(): SessionLogClasses<NamespacedSessionLog> {
  return {
    InMemorySessionLog: class InMemorySessionLog extends NamespacedSessionLog {
      constructor() {
        super(freshNamespace(), KERNEL_PRIMITIVES_V0_2_36);
      }
    },
    FileSessionLog: class FileSessionLog extends NamespacedSessionLog {
      constructor(dir: string) {
        super(directoryNamespace(dir), KERNEL_PRIMITIVES_V0_2_36);
      }
    },
  };
}

/**
 * The SDK's `InMemorySessionLog` and `FileSessionLog` at v0.2.60, on PostgreSQL, each with its
 * `kernelJournal` isolated as the SDK isolates it, throwing the SDK's `errors`.
 */
export function postgresSessionLogsV0260(errors: JournalErrorClasses): SessionLogClasses<JournaledSessionLog> {
  return {
    InMemorySessionLog: class InMemorySessionLog extends JournaledSessionLog {
      constructor() {
        const namespace = freshNamespace();
        super(namespace, new NamespacedKernelJournal(namespace, errors));
      }
    },
    FileSessionLog: class FileSessionLog extends JournaledSessionLog {
      constructor(dir: string) {
        super(directoryNamespace(dir), new NamespacedKernelJournal(directoryNamespace(path.join(dir, 'kernel-journal')), errors));
      }
    },
  };
}
