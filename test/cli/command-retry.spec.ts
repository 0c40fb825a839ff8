import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { commandRetry } from '../../src/cli/cli-context.js';
import { ConnectionLostError } from '../../src/db/connection-loss.js';
import { retryOnConnectionLoss } from '../../src/db/retry-on-connection-loss.js';
import { sleep } from '../../src/time/sleep.js';

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });

function retryWithStderr(seconds: string) {
  const stderr = new PassThrough();
  let told = '';
  stderr.on('data', (chunk: Buffer) => (told += chunk.toString()));
  return { retry: commandRetry({ stderr, env: { OS_AUDIT_CONNECT_RETRY_SECONDS: seconds } }), told: () => told };
}

describe("a command's retry", () => {
  it('ends nested retries (the connection\'s inside the work\'s) at one deadline', async () => {
    const { retry, told } = retryWithStderr('1');
    const started = Date.now();
    const failing = () => Promise.reject(refused());
    const error = await retryOnConnectionLoss(() => retryOnConnectionLoss(failing, retry), retry).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(ConnectionLostError);
    // Each level on its own deadline took 2 s.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(Date.now() - started).toBeLessThan(1800);
    expect(told()).toBe('os-audit: cannot reach PostgreSQL (connect ECONNREFUSED 127.0.0.1:1); trying again for up to 1 s\n');
  });

  it('gives each outage its own deadline once a connection was made again', async () => {
    const { retry, told } = retryWithStderr('1');
    const outage = async () => {
      let failures = 2;
      await retryOnConnectionLoss(async () => {
        if (failures-- > 0) throw refused();
        retry.connected();
      }, retry);
    };
    await outage();
    await sleep(1200);
    await outage();
    expect(told().split('\n').filter(Boolean)).toHaveLength(2);
  });
});
