import type { Kysely } from 'kysely';
import { exactInteger } from '../db/exact-integer.js';
import { retryOnConnectionLoss } from '../db/retry-on-connection-loss.js';
import type { DB } from '../db/schema.js';
import { DEFAULT_CHUNK_SIZE } from '../import/default-chunk-size.js';
import type { EventLine } from '../import/event-line.js';
import { type SessionFile, sessionFileEvents, sessionFilesOf } from '../import/import-logs.js';
import { MAX_CHUNK_CHARS } from '../import/log-writer.js';
import { checkSessionId, type EncodedEvent } from '../events/encode-event.js';
import { EventStore } from '../store/event-store.js';
import { InvalidEventError } from '../events/invalid-event-error.js';
import type { Limits } from '../events/limits.js';
import { emptyRows, pushRow } from '../store/sql/event-rows.js';

/**
 * How a session of the folder or of the database is not clean:
 * - `differs`: both have it, and its events differ from `seq` on;
 * - `missing`: the folder has it (a file with events), the database does not;
 * - `extra`: the database has it, the folder has no file of it;
 * - `unreadable`: its file holds a line that import would refuse (or is no file to read).
 */
export type FolderDifferenceKind = 'differs' | 'missing' | 'extra' | 'unreadable';

/** A session whose stored log is not its file's, and the first place where they part. */
export interface FolderDifference {
  sessionId: string;
  kind: FolderDifferenceKind;
  /**
   * The first seq at which the file and the database disagree: for `missing` the file's first,
   * for `extra` 0; for `unreadable` the refused line's seq, null when it was refused before its
   * seq was read.
   */
  seq: number | null;
  /** The session's file; null for `extra`. */
  file: string | null;
  /** The line of `file` that holds `seq`, or the refused line; null when there is none. */
  line: number | null;
  /** What differs, in words (for `unreadable`, why import would refuse the line). */
  reason: string;
}

/** What {@link verifyAgainstFolder} found, session by session. */
export interface FolderVerifyReport {
  /** Sessions compared: each session file of the folder, and each session of the database that has none. */
  sessions: number;
  /** Sessions by outcome; `clean`: stored exactly as their file has them (an empty file: not stored). */
  counts: Record<FolderDifferenceKind | 'clean', number>;
  /** Each session that is not clean, in the order found (none kept when `onDifference` takes them). */
  differences: FolderDifference[];
  /** Entries of the folder that are no `<session_id>.jsonl` file, its `kernel-journal/` among them: they are not compared. */
  ignoredEntries: string[];
}

export interface VerifyFolderOptions extends Limits {
  /** Events compared per query, as many as import stores at a time; default 2000. */
  chunkSize?: number;
  /**
   * Told each session that is not clean as soon as it is known, then forgotten: the report keeps
   * none, for a database that may hold millions of sessions the folder has not.
   */
  onDifference?: (difference: FolderDifference) => void | Promise<void>;
}

/** Sessions of the database read per query, looking for those the folder has not. */
const STORED_SESSIONS_PER_PAGE = 10_000;

/**
 * Checks the runtime's own log folder against the database. It tells whether each session's
 * stored events are, byte for byte, what `os-audit import` of the folder would store. Each line
 * is read, checked and encoded by the import's own code, and compared as a re-import compares
 * it. It also tells which sessions the database lacks and which it has that the folder does
 * not. Every session is checked, whatever was found before it; a line that import would refuse
 * is reported for its session, not thrown. Memory stays bounded but for the folder's listing:
 * the files are streamed and compared a chunk of events per query, the database's sessions read
 * a page at a time.
 *
 * The session logs alone are compared: a v0.2.60 folder's `kernel-journal/` is not. Events
 * stored before migration 0007, whose text jsonb rewrote, match by value, as a re-import finds.
 *
 * @example
 * ```ts
 * const report = await verifyAgainstFolder(db, 'logs/');
 * if (report.counts.clean !== report.sessions) process.exitCode = 1;
 * ```
 */
export async function verifyAgainstFolder(db: Kysely<DB>, directory: string, options: VerifyFolderOptions = {}): Promise<FolderVerifyReport> {
  const { files, ignoredEntries } = await sessionFilesOf(directory);
  const report: FolderVerifyReport = {
    sessions: 0,
    counts: { clean: 0, differs: 0, missing: 0, extra: 0, unreadable: 0 },
    differences: [],
    ignoredEntries,
  };
  const found = async (difference: FolderDifference | undefined) => {
    report.sessions += 1;
    report.counts[difference?.kind ?? 'clean'] += 1;
    if (difference === undefined) return;
    if (options.onDifference === undefined) report.differences.push(difference);
    else await options.onDifference(difference);
  };

  const comparison = new FolderComparison(new EventStore(db), options.chunkSize ?? DEFAULT_CHUNK_SIZE, found);
  for (const file of files) await comparison.addFile(file, options);
  await comparison.flush();

  const folderSessions = new Set(files.map((file) => file.sessionId));
  for await (const page of storedSessions(db)) {
    for (const { sessionId, lastSeq } of page) {
      if (folderSessions.has(sessionId)) continue;
      await found({ sessionId, kind: 'extra', seq: 0, file: null, line: null, reason: `in the database (whose log ends at seq ${lastSeq}), not in the folder` });
    }
  }
  return report;
}

/**
 * The session files of a folder, compared with the database a chunk of events at a time. Each
 * file's events are held until their chunk is compared. A session is told about once its file
 * is read to its end and all its events are compared.
 */
class FolderComparison {
  private rows: PendingRow[] = [];
  private rowChars = 0;
  /** Sessions whose files are being read or whose events wait for their chunk's comparison. */
  private open: SessionCheck[] = [];

  constructor(
    private readonly store: EventStore,
    private readonly chunkSize: number,
    private readonly found: (difference: FolderDifference | undefined) => Promise<void>,
  ) {}

  async addFile(file: SessionFile, limits: Limits): Promise<void> {
    const check = new SessionCheck(file);
    this.open.push(check);
    try {
      if (file.refusal !== undefined) throw new InvalidEventError({ file: file.path }, file.refusal);
      checkSessionId(file.sessionId, { file: file.path }, limits);
      for await (const { events } of sessionFileEvents(file, limits)) {
        for (const event of events) this.add(check, event);
        if (this.rows.length >= this.chunkSize || this.rowChars >= MAX_CHUNK_CHARS) await this.flush();
      }
    } catch (error) {
      // What import would refuse of the file; anything else (an unreadable disk…) stops the check.
      if (!(error instanceof InvalidEventError)) throw error;
      check.refusal = error;
    }
    check.read = true;
    // Files without events add no rows: many of them must not pile up either.
    if (this.open.length >= this.chunkSize) await this.flush();
  }

  private add(check: SessionCheck, { seq, event, origin }: EventLine): void {
    check.see(seq, origin.line ?? null);
    this.rows.push({ check, seq, line: origin.line ?? null, event });
    this.rowChars += event.payload.length + (event.payloadText?.length ?? 0);
  }

  /** Compares the rows held, then tells about each session whose file is read. */
  async flush(): Promise<void> {
    const rows = this.rows;
    this.rows = [];
    this.rowChars = 0;
    await this.readStoredHeads();
    await this.compare(rows.filter((row) => row.check.refusal === undefined && row.check.storedLastSeq! >= 0));
    const open = this.open;
    this.open = open.filter((check) => !check.read);
    for (const check of open) if (check.read) await this.found(check.difference());
  }

  private async readStoredHeads(): Promise<void> {
    const unknown = this.open.filter((check) => check.storedLastSeq === undefined);
    const heads = await this.store.lastSeqs(unknown.filter((check) => check.refusal === undefined).map((check) => check.sessionId));
    for (const check of unknown) check.storedLastSeq = heads.get(check.sessionId) ?? -1;
  }

  /**
   * Finds, among rows of stored sessions, each session's lowest seq stored otherwise. It uses
   * the store's own re-import comparison: one query for the rows that match, and one more per row
   * found differing. Rows of a seq above their session's difference are no longer compared.
   */
  private async compare(rows: readonly PendingRow[]): Promise<void> {
    let remaining = rows;
    for (;;) {
      remaining = remaining.filter((row) => row.check.mayDifferAt(row.seq));
      if (remaining.length === 0) return;
      const eventRows = emptyRows();
      for (const { check, seq, event } of remaining) pushRow(eventRows, check.sessionId, seq, event);
      const index = await this.store.findFirstMismatch(eventRows);
      if (index === -1) return;
      const { check, seq, line } = remaining[index]!;
      check.differsAt(seq, line);
      remaining = remaining.slice(index + 1);
    }
  }
}

interface PendingRow {
  check: SessionCheck;
  seq: number;
  line: number | null;
  event: EncodedEvent;
}

/** What is known of one session file and its stored log. */
class SessionCheck {
  readonly sessionId: string;
  /** Its file is read to its end (or to a line import refuses). */
  read = false;
  refusal: InvalidEventError | undefined;
  /** The seq of its stored log's last event, -1 when it has none; undefined until asked. */
  storedLastSeq: number | undefined;
  /** Seqs 0 to `contiguousEnd - 1` are all in the file. */
  private contiguousEnd = 0;
  /** Seqs above `contiguousEnd` met before it: none in a file written in seq order. */
  private readonly early = new Set<number>();
  private first: { seq: number; line: number | null } | undefined;
  /** The lowest seq found stored otherwise than the file has it. */
  private firstDiffering: { seq: number; line: number | null } | undefined;

  constructor(private readonly file: SessionFile) {
    this.sessionId = file.sessionId;
  }

  see(seq: number, line: number | null): void {
    if (this.first === undefined || seq < this.first.seq) this.first = { seq, line };
    if (seq > this.contiguousEnd) {
      this.early.add(seq);
    } else if (seq === this.contiguousEnd) {
      this.contiguousEnd += 1;
      while (this.early.delete(this.contiguousEnd)) this.contiguousEnd += 1;
    }
  }

  /** Whether a row of this seq could still be the session's first difference. */
  mayDifferAt(seq: number): boolean {
    return this.firstDiffering === undefined || seq < this.firstDiffering.seq;
  }

  differsAt(seq: number, line: number | null): void {
    if (this.mayDifferAt(seq)) this.firstDiffering = { seq, line };
  }

  /** The session's difference, once its file is read and its rows compared; undefined when it is clean. */
  difference(): FolderDifference | undefined {
    const at = { sessionId: this.sessionId, file: this.file.path };
    if (this.refusal !== undefined) {
      return { ...at, kind: 'unreadable', seq: this.refusal.origin.seq ?? null, line: this.refusal.origin.line ?? null, reason: this.refusal.reason };
    }
    const storedLastSeq = this.storedLastSeq!;
    if (storedLastSeq === -1) {
      return this.first && { ...at, kind: 'missing', seq: this.first.seq, line: this.first.line, reason: 'the session is not in the database' };
    }
    // The stored log is seqs 0 to storedLastSeq: the lowest of them the file lacks is contiguousEnd.
    const lacked = this.contiguousEnd <= storedLastSeq ? this.contiguousEnd : undefined;
    if (lacked !== undefined && (this.firstDiffering === undefined || lacked < this.firstDiffering.seq)) {
      return { ...at, kind: 'differs', seq: lacked, line: null, reason: `in the database (whose log ends at seq ${storedLastSeq}), not in the file` };
    }
    if (this.firstDiffering === undefined) return undefined;
    const { seq, line } = this.firstDiffering;
    const reason = seq > storedLastSeq ? `not in the database, whose log ends at seq ${storedLastSeq}` : 'the database holds another event';
    return { ...at, kind: 'differs', seq, line, reason };
  }
}

/** The database's sessions and the seq of each one's last event, a page at a time. */
async function* storedSessions(db: Kysely<DB>): AsyncGenerator<{ sessionId: string; lastSeq: number }[]> {
  let after: string | undefined;
  for (;;) {
    let query = db.selectFrom('sessions').select(['session_id', 'last_seq']).orderBy('session_id').limit(STORED_SESSIONS_PER_PAGE);
    if (after !== undefined) query = query.where('session_id', '>', after);
    const page = await retryOnConnectionLoss(() => query.execute());
    if (page.length > 0) yield page.map((row) => ({ sessionId: row.session_id, lastSeq: exactInteger(row.last_seq) }));
    if (page.length < STORED_SESSIONS_PER_PAGE) return;
    after = page[page.length - 1]!.session_id;
  }
}
