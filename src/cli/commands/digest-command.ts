import { chmod, readFile, writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { type CliIo, CliError, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';
import { countOf } from '../../text/count-of.js';

export function registerDigestCommand(program: Command, io: CliIo): void {
  program
    .command('digest')
    .description("write a digest of the log: every session's head hash at one consistent point, chained to the previous digest, signed with --key")
    .option('--dir <dir>', 'write it into this folder of digests, after the latest one there')
    .option('--out <file>', 'write it to this file (default: standard output)')
    .option('--previous <file>', 'the digest this one follows (with --out or standard output)')
    .option('--key <file>', 'sign it with this Ed25519 private key (PEM)')
    .option('--new-key <file>', 'make an Ed25519 key pair instead: FILE (private, mode 0600) and FILE.pub (public)')
    .addHelpText(
      'after',
      '\nKeep digests, or copies of them, where whoever runs the database cannot change them; check the log against them with os-audit verify --digest.',
    )
    .action(async (options: { dir?: string; out?: string; previous?: string; key?: string; newKey?: string }, command: Command) => {
      const { newSigningKeyPair, readPrivateKey } = await import('../../integrity/digest.js');
      if (options.newKey !== undefined) {
        const { privateKeyPem, publicKeyPem } = newSigningKeyPair();
        await writeFile(options.newKey, privateKeyPem, { mode: 0o600, flag: 'wx' }).catch((error: NodeJS.ErrnoException) => {
          throw new CliError(error.code === 'EEXIST' ? `${options.newKey} exists: digest --new-key never overwrites a key` : `${options.newKey}: ${error.message}`);
        });
        await chmod(options.newKey, 0o600);
        await writeFile(`${options.newKey}.pub`, publicKeyPem);
        await write(io.stdout, `wrote the private key to ${options.newKey} and the public key to ${options.newKey}.pub\n`);
        return;
      }
      if (options.dir !== undefined && (options.out !== undefined || options.previous !== undefined)) {
        throw new CliError('--dir finds the previous digest in the folder and names the file itself: give --out and --previous without it', 2);
      }
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const privateKey = options.key === undefined ? undefined : readPrivateKey(await readFile(options.key, 'utf8'), options.key);
      const { writeDigest } = await import('../../integrity/write-digest.js');
      const written = await withDatabase(url, (db) => writeDigest(db, { dir: options.dir, out: options.out, previousFile: options.previous, privateKey }));
      if (written.path === undefined) {
        await write(io.stdout, written.text);
        return;
      }
      const { body } = written.digest;
      await write(
        io.stdout,
        `wrote ${written.path}: ${countOf(body.sessions, 'session')}, ${countOf(body.events, 'event')}, root ${body.root}${privateKey === undefined ? ', not signed' : ', signed'}\n`,
      );
    });
}
