import type { Command } from 'commander';
import { integerOption } from '../parse-integer-option.js';
import { type CliIo, CliError, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';

export function registerEventsCommand(program: Command, io: CliIo): void {
  program
    .command('events')
    .description('print a stored session log as JSONL: {"seq":N,"event":{...}} per line, each event as it was written')
    .argument('<session>', 'the session id')
    .option('--from-seq <seq>', 'start at this seq', integerOption(0), 0)
    .option('--bare', 'print only the events, one per line')
    .action(async (sessionId: string, options: { fromSeq: number; bare?: boolean }, command: Command) => {
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const [{ EventStore }, { checkStoredEvent }] = await Promise.all([import('../../store/event-store.js'), import('../../stored-log/read-stored-event.js')]);
      const printed = await withDatabase(url, async (db) => {
        let count = 0;
        for await (const stored of new EventStore(db).readSessionText(sessionId, { fromSeq: options.fromSeq })) {
          // A line that is no event is never printed: a text written around the store fails the command here.
          checkStoredEvent(stored);
          await write(io.stdout, options.bare ? `${stored.text}\n` : `{"seq":${stored.seq},"event":${stored.text}}\n`);
          count += 1;
        }
        return count;
      }, { rideThrough: { io, rerun: 'connect' } });
      if (printed === 0) throw new CliError(`no events stored for session ${JSON.stringify(sessionId)} from seq ${options.fromSeq}`);
    });
}
