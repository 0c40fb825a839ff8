import type { Command } from 'commander';
import { stringifyJson } from '../../json/stringify-json.js';
import { EventStore } from '../../store/event-store.js';
import { integerOption } from '../parse-integer-option.js';
import { type CliIo, CliError, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';

export function registerEventsCommand(program: Command, io: CliIo): void {
  program
    .command('events')
    .description('print a stored session log as JSONL: {"seq":N,"event":{...}} per line, values exact')
    .argument('<session>', 'the session id')
    .option('--from-seq <seq>', 'start at this seq', integerOption(0), 0)
    .option('--bare', 'print only the events, one per line')
    .action(async (sessionId: string, options: { fromSeq: number; bare?: boolean }, command: Command) => {
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const printed = await withDatabase(url, async (db) => {
        let count = 0;
        for await (const stored of new EventStore(db).readSession(sessionId, { fromSeq: options.fromSeq })) {
          const event = stringifyJson(stored.event);
          await write(io.stdout, options.bare ? `${event}\n` : `{"seq":${stored.seq},"event":${event}}\n`);
          count += 1;
        }
        return count;
      });
      if (printed === 0) throw new CliError(`no events stored for session ${JSON.stringify(sessionId)} from seq ${options.fromSeq}`);
    });
}
