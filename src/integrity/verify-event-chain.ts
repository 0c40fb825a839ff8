import { type Kysely, type RawBuilder, sql } from 'kysely';
import { exactInteger } from '../db/exact-integer.js';
import type { DB } from '../db/schema.js';

/** The first thing wrong with one session's log, or with its head. */
export interface ChainProblem {
  sessionId: string;
  /** The first seq affected. */
  seq: number;
  problem: string;
}

export interface ChainReport {
  /** Sessions and events whose chain was checked. */
  sessions: number;
  events: number;
  /** At most one per session: its first seq affected. */
  problems: ChainProblem[];
}

/**
 * Checks every link of the hash chain of the chosen sessions (all by default) against the
 * bytes as stored: each event's hash against its seq, its text and its predecessor's hash, and
 * each head against its last event. A change of any stored byte, a removed, reordered or
 * inserted event shows at its seq, unless whoever changed it also rewrote every later hash
 * with the database's help: a digest kept elsewhere catches that (`verifyAgainstDigest`).
 *
 * @example
 * ```ts
 * const { problems } = await verifyEventChain(db);
 * for (const p of problems) console.log(`session ${p.sessionId}: seq ${p.seq}: ${p.problem}`);
 * ```
 */
export async function verifyEventChain(db: Kysely<DB>, selection: { sessions?: readonly string[] } = {}): Promise<ChainReport> {
  const chosen = selection.sessions === undefined ? sql`true` : sql`e.session_id = ANY(${[...selection.sessions]}::text[])`;
  const chosenHeads = selection.sessions === undefined ? sql`true` : sql`s.session_id = ANY(${[...selection.sessions]}::text[])`;
  // The links in one parallel query over the events; the heads and counts meanwhile, each on a connection of its own.
  const [links, heads, counts] = await Promise.all([
    checkLinks(db, chosen, selection.sessions === undefined),
    sql<{ session_id: string; seq: string; problem: string }>`
      SELECT s.session_id, least(s.last_seq, coalesce(last.seq, -1)) + 1 AS seq,
        CASE WHEN last.seq IS NULL THEN 'the session has a head but no event'
             WHEN last.seq < s.last_seq THEN format('its head is at seq %s but its log ends at seq %s', s.last_seq, last.seq)
             WHEN last.seq > s.last_seq THEN format('its log goes on past its head (seq %s) to seq %s', s.last_seq, last.seq)
             ELSE 'its head hash is not the hash of its last event' END AS problem
      FROM sessions AS s
      LEFT JOIN LATERAL (SELECT e.seq, e.hash FROM session_events AS e WHERE e.session_id = s.session_id ORDER BY e.seq DESC LIMIT 1) AS last ON true
      WHERE ${chosenHeads} AND (last.seq IS DISTINCT FROM s.last_seq OR s.head_hash IS DISTINCT FROM last.hash)`.execute(db),
    sql<{ sessions: string; events: string }>`
      SELECT count(*) AS sessions, coalesce(sum(s.last_seq + 1), 0) AS events FROM sessions AS s WHERE ${chosenHeads}`.execute(db),
  ]);
  // Rows stored before 0017 were never checked against their event: their turn and exact text are checked here.
  const { rows: unchecked } = await sql<{ position: string | null }>`SELECT unchecked_through_position AS position FROM event_chain_backfill`.execute(db);
  const uncheckedThrough = unchecked[0]?.position ?? null;
  const rows =
    uncheckedThrough === null
      ? []
      : (
          await sql<{ session_id: string; seq: string; problem: string }>`
            SELECT DISTINCT ON (e.session_id) e.session_id, e.seq,
              CASE WHEN e.turn IS DISTINCT FROM os_audit_turn_as_written(e.payload)
                   THEN format('column turn (%s) is not the event''s turn (%s)', coalesce(e.turn::text, 'null'), coalesce(os_audit_turn_as_written(e.payload)::text, 'none'))
                   ELSE 'column payload_text ' || os_audit_exact_text_problem(e.payload, e.payload_text) END AS problem
            FROM session_events AS e
            WHERE ${chosen} AND e.position <= ${uncheckedThrough}::bigint
              AND (e.turn IS DISTINCT FROM os_audit_turn_as_written(e.payload)
                   OR (e.payload_text IS NOT NULL AND os_audit_exact_text_problem(e.payload, e.payload_text) IS NOT NULL))
            ORDER BY e.session_id, e.seq`.execute(db)
        ).rows;
  return {
    sessions: exactInteger(counts.rows[0]!.sessions),
    events: exactInteger(counts.rows[0]!.events),
    problems: firstPerSession([...links.rows, ...heads.rows, ...rows].map((row) => ({ sessionId: row.session_id, seq: exactInteger(row.seq), problem: row.problem }))),
  };
}

/**
 * The first broken link of each chosen session, by seq: an event whose hash is not that of its
 * seq, its stored text and its predecessor's hash; or any event of a session without a head.
 */
async function checkLinks(db: Kysely<DB>, chosen: RawBuilder<unknown>, wholeLog: boolean) {
  const expected = sql`sha256(CASE WHEN e.seq = 0 THEN os_audit_chain_start(e.session_id) ELSE p.hash END
                              || int8send(e.seq) || convert_to(coalesce(e.payload_text, e.payload::text), 'UTF8'))`;
  return db.transaction().execute(async (trx) => {
    // Planned for the whole log, the pass is a parallel hash join of the events with their
    // predecessors' hashes. JIT compiles for longer than it saves on it. The hashes (about 100
    // bytes an event) are kept in memory rather than the events' texts spilled in batches. A
    // memoized look-up per event, which the planner can take for cheaper, never hits its cache.
    await sql`SET LOCAL jit = off`.execute(trx);
    await sql`SET LOCAL work_mem = '64MB'`.execute(trx);
    await sql`SET LOCAL enable_memoize = off`.execute(trx);
    if (wholeLog) {
      // The planner prices a parallel pass of the whole log above a serial one, which it is not:
      // 1M events here took 2.9 s with two workers, 3.7-4.5 s without.
      await sql`SET LOCAL parallel_setup_cost = 0`.execute(trx);
      await sql`SET LOCAL parallel_tuple_cost = 0`.execute(trx);
    }
    return sql<{ session_id: string; seq: string; problem: string }>`
      SELECT DISTINCT ON (e.session_id) e.session_id, CASE WHEN e.hash IS NOT NULL AND e.seq > 0 AND p.seq IS NULL THEN e.seq - 1 ELSE e.seq END AS seq,
        CASE WHEN e.hash IS NOT DISTINCT FROM ${expected} THEN 'the session has events but no head'
             WHEN e.hash IS NULL THEN 'not chained yet: os-audit migrate chains the events stored before the chain'
             WHEN e.seq > 0 AND p.seq IS NULL THEN 'it is missing: the event after it has no predecessor'
             ELSE 'its hash is not that of its stored text and the hash before it: the event was changed, moved or inserted' END AS problem
      FROM session_events AS e
      LEFT JOIN session_events AS p ON p.session_id = e.session_id AND p.seq = e.seq - 1
      LEFT JOIN sessions AS s ON s.session_id = e.session_id
      WHERE ${chosen} AND (e.hash IS DISTINCT FROM ${expected} OR s.session_id IS NULL)
      ORDER BY e.session_id, e.seq`.execute(trx);
  });
}

/** One problem per session, its lowest seq's, sessions in id order. */
export function firstPerSession(problems: readonly ChainProblem[]): ChainProblem[] {
  const first = new Map<string, ChainProblem>();
  for (const problem of problems) {
    const known = first.get(problem.sessionId);
    if (known === undefined || problem.seq < known.seq) first.set(problem.sessionId, problem);
  }
  return [...first.values()].sort((a, b) => (a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : 0));
}
