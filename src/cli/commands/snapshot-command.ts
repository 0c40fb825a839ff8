import type { Command } from 'commander';
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { JsonValue } from '../../json/json-value.js';
import { type CliIo, CliError, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';
import { integerOption } from '../parse-integer-option.js';
import { chooseProjections, commandProjections } from '../projection-options.js';
import { hasInMemoryFold } from '../../projector/projection.js';

/** `snapshot`'s exit code when the session is stopped: its snapshot is the one before the stop. */
export const STOPPED_EXIT_CODE = 3;

interface SessionStop {
  seq: number;
  problem: string;
}

/** Where and why `projection` stopped the session, from the view `os_blocked_sessions` (which readers may read). */
async function readSessionStop(db: Kysely<DB>, projection: string, sessionId: string): Promise<SessionStop | undefined> {
  const row = await db
    .selectFrom('os_blocked_sessions')
    .select(['blocked_at_seq', 'problem'])
    .where('projection', '=', projection)
    .where('session_id', '=', sessionId)
    .executeTakeFirst();
  return row && { seq: Number(row.blocked_at_seq), problem: row.problem ?? '' };
}

export function registerSnapshotCommand(program: Command, io: CliIo): void {
  program
    .command('snapshot')
    .description("print a session's snapshot as JSON, read from a projection's SQL tables")
    .argument('<session>', 'the session id')
    .option('--projection <name>', 'the projection to read (default: the first, os_snapshot: the OS audit snapshot of the spec)')
    .option('--at-seq <seq>', 'the snapshot as it was after this seq (folded from the log)', integerOption(0))
    .addHelpText('after', `\nExit code ${STOPPED_EXIT_CODE} when the projection stopped the session: the snapshot printed is the one before the stop, and stderr says where and why.`)
    .action(async (sessionId: string, options: { atSeq?: number; projection?: string }, command: Command) => {
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const [{ indentJson }, { stringifyJson }, { foldStoredLog, readStoredSnapshot, skippedPositions }] = await Promise.all([
        import('../../json/json-text.js'),
        import('../../json/stringify-json.js'),
        import('../../projector/stored-snapshot.js'),
      ]);
      const projection = chooseProjections(await commandProjections(command, io), options.projection, true)[0]!;
      const { snapshot, stop } = await withDatabase(url, async (db): Promise<{ snapshot: JsonValue; stop?: SessionStop }> => {
        if (options.atSeq === undefined) {
          const stored = await readStoredSnapshot(db, projection, sessionId);
          if (stored === undefined) {
            throw new CliError(`no ${projection.name} snapshot of session ${JSON.stringify(sessionId)}: no events stored, or not projected yet (see os-audit status)`);
          }
          return { snapshot: stored.json, stop: await readSessionStop(db, projection.name, sessionId) };
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
        return { snapshot: projection.toJson(folded.state) };
      }, { rideThrough: { io, rerun: 'work' } });
      await write(io.stdout, `${indentJson(stringifyJson(snapshot), 2)}\n`);
      // The frozen prefix is printed all the same; the exit code tells a script it is one.
      if (stop !== undefined) {
        throw new CliError(`session ${JSON.stringify(sessionId)} is stopped at seq ${stop.seq} by projection ${projection.name}: ${stop.problem}`, STOPPED_EXIT_CODE);
      }
    });
}
