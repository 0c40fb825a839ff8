import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { DB } from '../src/db/schema.js';
import { EventStore } from '../src/store/event-store.js';
import { copyField } from '../src/store/sql/copy-events.js';
import { checkpointClient } from './checkpoint.js';
import type { CorpusRow } from './corpus.js';

/** The columns a COPY of events always writes, from the row itself. */
const ROW_COLUMNS = ['session_id', 'seq', 'kind', 'turn', 'payload'];
/** Columns the database fills at insert (identity, transaction, clock, the hash chain's trigger). */
const INSERT_COLUMNS = ['position', 'transaction_id', 'recorded_at', 'hash'];

/**
 * How the store's own writers fill `session_events`: beyond the row's columns and those the
 * database fills at insert, the value each other column gets (e.g. `payload_text` NULL for a
 * storable body, or a flag the writer sets), as COPY text. A COPY that writes these is the same
 * rows as an append, whatever columns the schema has grown.
 */
export interface EventLayout {
  extraColumns: string[];
  /** COPY text of each extra column's value (`\N` for NULL). */
  extraValues: string[];
}

class ProbeRollback extends Error {}

/**
 * Appends two events with `EventStore.append` in a transaction that is rolled back, and reads
 * back what it wrote in each column. Throws if a column is not the same for both: the loader
 * could then not write it as the store does.
 */
export async function probeEventLayout(db: Kysely<DB>): Promise<EventLayout> {
  const { rows: columns } = await sql<{ column_name: string }>`
    SELECT column_name FROM information_schema.columns
    WHERE table_schema = current_schema() AND table_name = 'session_events' ORDER BY ordinal_position`.execute(db);
  const extraColumns = columns.map((c) => c.column_name).filter((c) => !ROW_COLUMNS.includes(c) && !INSERT_COLUMNS.includes(c));
  let layout: EventLayout | undefined;
  try {
    await db.transaction().execute(async (trx) => {
      await new EventStore(trx).append('bench-layout-probe', [
        { kind: 'page_in', turn: 1, entry_count: 2 },
        { kind: 'suspended', turn: 2, reason: 'ask_user', pending_calls: ['c1'] },
      ]);
      const values = extraColumns.map((column) => sql`${sql.ref(column)}::text`);
      const { rows } = await sql<{ v: (string | null)[] }>`
        SELECT ARRAY[${values.length > 0 ? sql.join(values) : sql``}]::text[] AS v
        FROM session_events WHERE session_id = 'bench-layout-probe' ORDER BY seq`.execute(trx);
      const [first, second] = rows.map((row) => row.v);
      extraColumns.forEach((column, i) => {
        if (first![i] !== second![i]) throw new Error(`session_events.${column} differs between appended events: the bench loader cannot write it`);
      });
      layout = { extraColumns, extraValues: first!.map((value) => (value === null ? '\\N' : copyField(value))) };
      throw new ProbeRollback();
    });
  } catch (error) {
    if (!(error instanceof ProbeRollback)) throw error;
  }
  return layout!;
}

/** The column list of a COPY of events in `layout`. */
export function eventCopyColumns(layout: EventLayout): string {
  return `(${[...ROW_COLUMNS, ...layout.extraColumns].join(', ')})`;
}


/** One `session_events` row as a line of COPY's text format, its columns {@link eventCopyColumns}. */
export function copyLine(row: Pick<CorpusRow, 'sessionId' | 'seq' | 'kind' | 'turn' | 'json'>, layout: EventLayout): string {
  const extra = layout.extraValues.length > 0 ? `\t${layout.extraValues.join('\t')}` : '';
  return `${row.sessionId}\t${row.seq}\t${row.kind}\t${row.turn === null ? '\\N' : row.turn}\t${copyField(row.json)}${extra}\n`;
}

/** Groups lines into chunks of about `bytes` characters (fewer, larger writes). */
export function* chunked(lines: Iterable<string>, bytes = 256 * 1024): Generator<string> {
  let parts: string[] = [];
  let size = 0;
  for (const line of lines) {
    parts.push(line);
    size += line.length;
    if (size >= bytes) {
      yield parts.join('');
      parts = [];
      size = 0;
    }
  }
  if (parts.length > 0) yield parts.join('');
}

/** Streams `chunks` (COPY text) into `table columns` over `client`; resolves when the server has them. */
export async function copyInto(client: pg.Client | pg.PoolClient, target: string, chunks: Iterable<string>): Promise<void> {
  const stream = client.query(copyFrom(`COPY ${target} FROM STDIN`));
  await pipeline(Readable.from(chunks, { objectMode: false }), stream);
}

/**
 * Stores a generated corpus straight into `session_events`, every column as `EventStore.append`
 * writes it (see {@link probeEventLayout}). Each COPY of `rowsPerTransaction` rows is its own
 * transaction, as many writers' commits would be. The `sessions` heads move first in the same
 * transaction: a log never goes past its head, and its head is its last event at each commit.
 * Then `VACUUM ANALYZE` and `CHECKPOINT` (of every node, on Citus) settle the database for what
 * is measured next. Returns the events stored.
 */
export async function loadRows(
  url: string,
  layout: EventLayout,
  rows: Iterable<CorpusRow>,
  options: { rowsPerTransaction?: number; onRow?: (row: CorpusRow) => void } = {},
): Promise<number> {
  const perTransaction = options.rowsPerTransaction ?? 100_000;
  const client = new pg.Client({ connectionString: url, application_name: 'os-audit-bench-load' });
  await client.connect();
  try {
    let count = 0;
    const iterator = rows[Symbol.iterator]();
    for (;;) {
      const lines: string[] = [];
      const heads = new Map<string, number>();
      while (lines.length < perTransaction) {
        const next = iterator.next();
        if (next.done) break;
        options.onRow?.(next.value);
        lines.push(copyLine(next.value, layout));
        heads.set(next.value.sessionId, Math.max(heads.get(next.value.sessionId) ?? -1, next.value.seq));
      }
      if (lines.length === 0) break;
      count += lines.length;
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO sessions (session_id, last_seq) SELECT * FROM unnest($1::text[], $2::bigint[])
         ON CONFLICT (session_id) DO UPDATE SET last_seq = excluded.last_seq`,
        [[...heads.keys()], [...heads.values()]],
      );
      await copyInto(client, `session_events ${eventCopyColumns(layout)}`, chunked(lines));
      await client.query('COMMIT');
      if (lines.length < perTransaction) break;
    }
    await client.query('VACUUM ANALYZE session_events');
    await client.query('VACUUM ANALYZE sessions');
    await checkpointClient(client);
    return count;
  } finally {
    await client.end();
  }
}
