/**
 * A writer of the fault tests and the soak, run as its own process so that it can be killed:
 * `node --import tsx fault-writer.ts '<WriterConfig as JSON>'`.
 *
 * Opens its connection, prints `ready`, then appends tagged events ({@link taggedEvent}) at a
 * steady rate through the library, each append written to its journal before it is sent and
 * again when acknowledged. A failed append is reported on stderr and the writer goes on (its
 * events may or may not be stored: the check allows both). SIGTERM: it finishes the append
 * under way, prints `stopped` and exits 0.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Prng } from '../../bench/prng.js';
import { openDatabase } from '../../src/db/open-database.js';
import { PostgresSessionLog } from '../../src/session-log/postgres-session-log.js';
import { EventStore } from '../../src/store/event-store.js';
import { AppendJournal, taggedEvent } from './append-journal.js';
import type { WriterConfig } from './writer-process.js';

const config = JSON.parse(process.argv[2]!) as WriterConfig;
const journal = new AppendJournal(config.journal);
const random = new Prng(config.name);
let stopping = false;
process.on('SIGTERM', () => (stopping = true));

/** Appends one unit's events to a session and returns their seqs. */
type Append = (sessionId: string, events: ReturnType<typeof taggedEvent>[]) => Promise<number[]>;

function openApi(): { append: Append; open: () => Promise<unknown>; close: () => Promise<void> } {
  if (config.api === 'session-log') {
    const log = PostgresSessionLog.connect({ connectionString: config.url, maxConnections: 1, applicationName: config.name });
    // The session log appends one event at a time: a unit is one event.
    return {
      append: async (sessionId, events) => [await log.append(sessionId, events[0]!)],
      open: () => log.latestSeq(config.sessions[0]!),
      close: () => log.close(),
    };
  }
  const db = openDatabase({ connectionString: config.url, maxConnections: 1, applicationName: config.name });
  const store = new EventStore(db);
  return { append: (sessionId, events) => store.append(sessionId, events), open: () => store.lastSeq(config.sessions[0]!), close: () => db.destroy() };
}

const api = openApi();
await api.open(); // the connection is open before the start
process.stdout.write('ready\n');

const [fewest, most] = config.api === 'session-log' ? [1, 1] : config.batch;
const start = performance.now();
let failures = 0;
for (let n = 0; config.units === undefined || n < config.units; n += 1) {
  if (stopping) break;
  // A steady rate: unit n is due at start + n / rate, late ones go at once.
  const due = start + (n * 1000) / config.appendsPerSecond;
  if (due > performance.now()) await sleep(due - performance.now());
  const id = `${config.name}-${n}`;
  const sessionId = random.pick(config.sessions);
  const events = Array.from({ length: random.int(fewest, most) }, (_, i) => taggedEvent(id, i));
  journal.intent({ id, sessionId, texts: events.map((event) => JSON.stringify(event)) });
  try {
    journal.ack(id, await api.append(sessionId, events));
  } catch (error) {
    failures += 1;
    process.stderr.write(`append ${id} failed: ${error instanceof Error ? error.message : String(error)}\n`);
    await sleep(100);
  }
}
journal.close();
await api.close();
process.stdout.write(`stopped ${JSON.stringify({ failures })}\n`);
