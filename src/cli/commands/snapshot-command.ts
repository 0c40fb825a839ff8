import type { Command } from 'commander';
import { serializeOsSnapshot } from '../../../projections/os-snapshot/serialize-os-snapshot.js';
import { foldStoredLog, readSqlOsSnapshot, skippedPositions } from '../../../projections/os-snapshot/stored-os-snapshot.js';
import { EventStore } from '../../store/event-store.js';
import { type CliIo, CliError, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';
import { integerOption } from '../parse-integer-option.js';

export function registerSnapshotCommand(program: Command, io: CliIo): void {
  program
    .command('snapshot')
    .description("print a session's OS audit snapshot as the spec's JSON, read from the SQL tables")
    .argument('<session>', 'the session id')
    .option('--at-seq <seq>', 'the snapshot as it was after this seq (folded from the log)', integerOption(0))
    .action(async (sessionId: string, options: { atSeq?: number }, command: Command) => {
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const snapshot = await withDatabase(url, async (db) => {
        if (options.atSeq === undefined) {
          const stored = await readSqlOsSnapshot(db, sessionId);
          if (stored === undefined) {
            throw new CliError(`no snapshot of session ${JSON.stringify(sessionId)}: no events stored, or not projected yet (see os-audit status)`);
          }
          return stored.snapshot;
        }
        const store = new EventStore(db);
        const last = await store.lastSeq(sessionId);
        if (options.atSeq > last) {
          throw new CliError(`session ${JSON.stringify(sessionId)} ends at seq ${last}; there is no seq ${options.atSeq}`);
        }
        const folded = await foldStoredLog(store, sessionId, { toSeq: options.atSeq, skippedPositions: await skippedPositions(db, sessionId) });
        if (folded.stopped !== null) {
          const stop = `session ${JSON.stringify(sessionId)} stops at seq ${folded.stopped.seq} (${folded.stopped.problem})`;
          // Stopped at its first event, there is no seq before the stop to point to.
          throw new CliError(
            folded.lastSeq < 0
              ? `${stop}: no event before it is folded, so its snapshot is the empty one`
              : `${stop}: its snapshot is the one after seq ${folded.lastSeq} (os-audit snapshot ${JSON.stringify(sessionId)} --at-seq ${folded.lastSeq})`,
          );
        }
        return folded.snapshot;
      }, { rideThrough: { io, rerun: 'work' } });
      await write(io.stdout, `${serializeOsSnapshot(snapshot, { indent: 2 })}\n`);
    });
}
