import type { KeyObject } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../db/schema.js';
import { writeDigest } from './write-digest.js';

export interface DigestSchedule {
  dir: string;
  everyMs: number;
  privateKey?: KeyObject;
}

/**
 * Writes a digest into `dir` every `everyMs` while `leading()` says this daemon leads: one
 * daemon of several writes them, the others stand by as they do for folding. A digest that
 * fails is logged and tried again at the next turn.
 */
export function startDigestSchedule(db: Kysely<DB>, schedule: DigestSchedule, leading: () => boolean, log: Logger): { stop: () => Promise<void> } {
  let running: Promise<void> = Promise.resolve();
  const turn = () => {
    if (!leading()) return;
    running = running.then(async () => {
      try {
        const { path, digest } = await writeDigest(db, { dir: schedule.dir, privateKey: schedule.privateKey });
        log.info({ event: 'digest', path, sessions: digest.body.sessions, events: digest.body.events, root: digest.body.root }, `wrote digest ${path}`);
      } catch (error) {
        log.error({ event: 'digest failed', err: error }, `writing a digest into ${schedule.dir} failed: ${(error as Error).message}`);
      }
    });
  };
  const timer = setInterval(turn, schedule.everyMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
