/**
 * One writer of the cross-process test, run as its own process:
 * `node --import tsx append-writer.ts DATABASE_URL SESSION WRITER COUNT`.
 *
 * Connects, prints `ready`, waits for a line on stdin (so that all writers start together),
 * then appends COUNT events to SESSION one after the other, each `{writer, index}`, and prints
 * `{"writer": W, "seqs": [...]}`: the seq each append resolved to.
 */
import { once } from 'node:events';
import { PostgresSessionLog } from '../../src/index.js';

const [databaseUrl, sessionId, writerArg, countArg] = process.argv.slice(2);
const writer = Number(writerArg);
const count = Number(countArg);

const log = PostgresSessionLog.connect({ connectionString: databaseUrl!, maxConnections: 1, applicationName: `append-writer-${writer}` });
try {
  await log.latestSeq(sessionId!); // open the connection before the start
  process.stdout.write('ready\n');
  await once(process.stdin, 'data');
  process.stdin.destroy();
  const seqs: number[] = [];
  for (let index = 0; index < count; index += 1) {
    seqs.push(await log.append(sessionId!, { kind: 'page_in', turn: index, entry_count: 1, writer, index }));
  }
  process.stdout.write(`${JSON.stringify({ writer, seqs })}\n`);
} finally {
  await log.close();
}
