import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The log folder the SDK v0.2.60 wrote (see `test/fixtures/sdk-v0.2.60-log.md`). */
export const SDK_LOG_FIXTURE = fileURLToPath(new URL('../fixtures/sdk-v0.2.60-log/', import.meta.url));

/** A copy of the SDK's log folder in `dir`, to change. */
export function copySdkLog(dir: string): string {
  cpSync(SDK_LOG_FIXTURE, dir, { recursive: true });
  return dir;
}

/** The folder of an operation in the SDK's `FileKernelJournal` layout. */
export function operationDir(logDir: string, operationId: string): string {
  return path.join(logDir, 'kernel-journal', `op-${Buffer.from(operationId, 'utf8').toString('base64url')}`);
}

/** Writes a file of an operation's folder (`records/000000000003.rec`, `pruned.json`, …) as the SDK would: JSON, or text as it is. */
export function writeJournalFile(logDir: string, operationId: string, relative: string, content: object | string): string {
  const file = path.join(operationDir(logDir, operationId), relative);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

export function recordName(stepSeq: number): string {
  return `records/${String(stepSeq).padStart(12, '0')}.rec`;
}

export function checkpointName(ordinal: number, extension: 'ckpt' | 'ack' = 'ckpt'): string {
  return `checkpoints/${String(ordinal).padStart(12, '0')}.${extension}`;
}

/** A record as the SDK persists it, of a chain whose digests are `<prefix>-<step_seq>`. */
export function chainRecord(prefix: string, stepSeq: number, bytes = `${prefix} ${stepSeq}`) {
  return {
    step_seq: stepSeq,
    record_digest: `${prefix}-${stepSeq}`,
    ...(stepSeq === 0 ? {} : { previous_record_digest: `${prefix}-${stepSeq - 1}` }),
    record_bytes: Buffer.from(bytes).toString('base64'),
  };
}

/** Writes records `from..to` of the chain `<prefix>-<step_seq>` for an operation. */
export function writeChain(logDir: string, operationId: string, prefix: string, from: number, to: number): void {
  for (let stepSeq = from; stepSeq <= to; stepSeq++) writeJournalFile(logDir, operationId, recordName(stepSeq), chainRecord(prefix, stepSeq));
}
