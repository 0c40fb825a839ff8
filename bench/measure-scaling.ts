import { otherLoad } from './other-load.js';
import { createScratchDatabase } from '../test/support/scratch-database.js';
import { loadRows, probeEventLayout } from './copy-rows.js';
import { CorpusStats, InterleavedCorpus } from './corpus.js';
import { type DiskSize, diskSize } from './disk-size.js';
import { mb, rate, resetProjection, runProjectorOnce, runSetBasedLimit, snapshotDigest } from './measure-catch-up.js';
import { secondsSince } from './stats.js';

export interface ScalingPoint {
  events: number;
  projectorSeconds: number;
  projectorEventsPerSecond: number;
  microsecondsPerEvent: number;
  limitSeconds: number;
  limitEventsPerSecond: number;
  ratio: number;
  peakRssBytes: number;
  digestsEqual: boolean;
  disk: DiskSize;
  loadSeconds: number;
}

/**
 * The scaling curve: one database grown to each size in turn (100k, then 900k more, then 4M
 * more, each part a corpus of its own). At each size it runs one catch-up of the whole log from
 * an empty projection (`os-audit project --once`) and one run of the set-based limit.
 */
export async function measureScaling(
  serverUrl: string,
  cliEntry: string,
  seed: string,
  sizes: readonly number[],
  log: (line: string) => void,
): Promise<ScalingPoint[]> {
  const scratch = await createScratchDatabase(serverUrl);
  otherLoad.addDatabase(scratch.name);
  const points: ScalingPoint[] = [];
  try {
    const layout = await probeEventLayout(scratch.db);
    let stored = 0;
    let rawJsonBytes = 0;
    for (const [index, size] of sizes.entries()) {
      const started = performance.now();
      const corpus = new InterleavedCorpus({ seed: `${seed}/scaling/${index}`, prefix: `sc${index}`, events: size - stored });
      const stats = new CorpusStats();
      await loadRows(scratch.url, layout, corpus.rows(), { onRow: (row) => stats.add(row, 1000) });
      stored = size;
      rawJsonBytes += stats.bytes;
      const loadSeconds = secondsSince(started);
      log(`  ${size.toLocaleString('en-US')} events stored (${loadSeconds.toFixed(1)} s to generate and load)`);

      await resetProjection(scratch.db);
      const limitSeconds = await runSetBasedLimit(scratch.db);
      const limitDigest = await snapshotDigest(scratch.db);
      await resetProjection(scratch.db);
      const run = await runProjectorOnce(scratch.url, cliEntry);
      if (run.eventsApplied !== size) throw new Error(`the projector folded ${run.eventsApplied} events, not ${size}`);
      const digest = await snapshotDigest(scratch.db);
      const disk = await diskSize(scratch.db, rawJsonBytes);
      const point: ScalingPoint = {
        events: size,
        projectorSeconds: run.seconds,
        projectorEventsPerSecond: run.eventsPerSecond,
        microsecondsPerEvent: (run.seconds * 1e6) / size,
        limitSeconds,
        limitEventsPerSecond: size / limitSeconds,
        ratio: run.eventsPerSecond / (size / limitSeconds),
        peakRssBytes: run.peakRssBytes,
        digestsEqual: digest.md5 === limitDigest.md5,
        disk,
        loadSeconds,
      };
      points.push(point);
      log(
        `  ${size.toLocaleString('en-US')} events: projector ${rate(point.projectorEventsPerSecond)} events/s ` +
          `(${point.microsecondsPerEvent.toFixed(1)} µs/event, peak RSS ${mb(point.peakRssBytes)} MB), ` +
          `limit ${rate(point.limitEventsPerSecond)} events/s, ratio ${point.ratio.toFixed(2)}, ` +
          `results equal: ${point.digestsEqual ? 'yes' : 'NO'}`,
      );
    }
    return points;
  } finally {
    await scratch.drop();
  }
}
