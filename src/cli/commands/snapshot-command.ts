import type { Command } from 'commander';
import type { JsonValue } from '../../json/json-value.js';
import { type CliIo, CliError, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';
import { integerOption } from '../parse-integer-option.js';
import { chooseProjections, commandProjections } from '../projection-options.js';
import { hasInMemoryFold } from '../../projector/projection.js';

export function registerSnapshotCommand(program: Command, io: CliIo): void {
  program
    .command('snapshot')
    .description("print a session's snapshot as JSON, read from a projection's SQL tables")
    .argument('<session>', 'the session id')
    .option('--projection <name>', 'the projection to read (default: the first, os_snapshot: the OS audit snapshot of the spec)')
    .option('--at-seq <seq>', 'the snapshot as it was after this seq (folded from the log)', integerOption(0))
    .action(async (sessionId: string, options: { atSeq?: number; projection?: string }, command: Command) => {
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const [{ indentJson }, { stringifyJson }, { foldStoredLog, readStoredSnapshot, skippedPositions }] = await Promise.all([
        import('../../json/json-text.js'),
        import('../../json/stringify-json.js'),
        import('../../projector/stored-snapshot.js'),
      ]);
      const projection = chooseProjections(await commandProjections(command, io), options.projection, true)[0]!;
      const snapshot = await withDatabase(url, async (db): Promise<JsonValue> => {
        if (options.atSeq === undefined) {
          const stored = await readStoredSnapshot(db, projection, sessionId);
          if (stored === undefined) {
            throw new CliError(`no ${projection.name} snapshot of session ${JSON.stringify(sessionId)}: no events stored, or not projected yet (see os-audit status)`);
          }
          return stored.json;
        }
        if (!hasInMemoryFold(projection)) {
          throw new CliError(`projection ${projection.name} is SQL-only: it has no in-memory fold to compute a snapshot at a seq (without --at-seq, its stored snapshot)`);
        }
        // The event store (and its COPY code) only for a fold: a stored snapshot needs neither.
        const { EventStore } = await import('../../store/event-store.js');
        const store = new EventStore(db);
        const last = await store.lastSeq(sessionId);
        if (options.atSeq > last) {
          throw new CliError(`session ${JSON.stringify(sessionId)} ends at seq ${last}; there is no seq ${options.atSeq}`);
        }
        const folded = await foldStoredLog(store, projection, sessionId, { toSeq: options.atSeq, skippedPositions: await skippedPositions(db, projection, sessionId) });
        if (folded.stopped !== null) {
          const stop = `session ${JSON.stringify(sessionId)} stops at seq ${folded.stopped.seq} (${folded.stopped.problem})`;
          // Stopped at its first event, there is no seq before the stop to point to.
          throw new CliError(
            folded.lastSeq < 0
              ? `${stop}: no event before it is folded, so its snapshot is the empty one`
              : `${stop}: its snapshot is the one after seq ${folded.lastSeq} (os-audit snapshot ${JSON.stringify(sessionId)} --at-seq ${folded.lastSeq})`,
          );
        }
        return projection.toJson(folded.state);
      }, { rideThrough: { io, rerun: 'work' } });
      await write(io.stdout, `${indentJson(stringifyJson(snapshot), 2)}\n`);
    });
}
