import { type RawBuilder, sql } from 'kysely';
import type { EncodedEvent } from '../../events/encode-event.js';

/** Encoded events as parallel arrays, the shape `unnest` takes them in. */
export interface EventColumns {
  kinds: string[];
  turns: (number | null)[];
  payloads: string[];
  payloadTexts: (string | null)[];
}

/** Rows of `session_events` to insert, with their session and seq. */
export interface EventRows extends EventColumns {
  sessionIds: string[];
  seqs: number[];
}

/**
 * The rows' columns as `ROWS FROM (…)` items, in the order kind, turn, payload (`json`),
 * payload_text. The bodies travel as one JSON array, several times cheaper than an array
 * literal, whose every quote must be escaped; `json_array_elements` hands out each element's
 * text as it was sent.
 */
export function eventColumnsSql(columns: EventColumns): RawBuilder<unknown> {
  return sql`unnest(${columns.kinds}::text[]), unnest(${columns.turns}::bigint[]),
             json_array_elements(${`[${columns.payloads.join(',')}]`}::json), unnest(${columns.payloadTexts}::text[])`;
}

export function columnsOf(events: readonly EncodedEvent[]): EventColumns {
  const columns: EventColumns = { kinds: [], turns: [], payloads: [], payloadTexts: [] };
  for (const event of events) pushColumns(columns, event);
  return columns;
}

export function emptyRows(): EventRows {
  return { sessionIds: [], seqs: [], kinds: [], turns: [], payloads: [], payloadTexts: [] };
}

export function pushRow(rows: EventRows, sessionId: string, seq: number, event: EncodedEvent): void {
  rows.sessionIds.push(sessionId);
  rows.seqs.push(seq);
  pushColumns(rows, event);
}

function pushColumns(columns: EventColumns, event: EncodedEvent): void {
  columns.kinds.push(event.kind);
  columns.turns.push(event.turn);
  columns.payloads.push(event.payload);
  columns.payloadTexts.push(event.payloadText);
}
