import { describe, expect, it } from 'vitest';
import { ConnectionLostError } from '../../src/db/connection-loss.js';
import { DiskFullError, isDiskFull, throwAsDiskFull } from '../../src/db/disk-full.js';
import { describeFailure } from '../../src/cli/describe-failure.js';

/** An error as node-postgres gives the server's: message, severity, SQLSTATE. */
const serverError = (message: string, code: string, severity = 'ERROR') => Object.assign(new Error(message), { code, severity });

// A real full disk is hard to make in a test: these are the errors PostgreSQL and Node give for one.
describe('a full disk', () => {
  const extend = serverError('could not extend file "base/16384/16390": No space left on device', '53100');
  const initFile = serverError('could not write init file', 'XX000', 'FATAL');
  const local = Object.assign(new Error("ENOSPC: no space left on device, write"), { code: 'ENOSPC', syscall: 'write', path: '/var/digests/d.json' });

  it('is told by SQLSTATE 53100, PostgreSQL\'s messages for it, or ENOSPC, also as a cause', () => {
    for (const error of [extend, initFile, serverError('could not write to file "pg_wal/xlogtemp.1": No space left on device', '58030'), local]) {
      expect(isDiskFull(error)).toBe(true);
    }
    expect(isDiskFull(new ConnectionLostError('lost', false, { cause: extend }))).toBe(true);
    for (const error of [serverError('duplicate key value violates unique constraint', '23505'), serverError('too many connections', '53300'), new Error('write EPIPE'), 'disk full', undefined]) {
      expect(isDiskFull(error)).toBe(false);
    }
  });

  it('is thrown as a DiskFullError, the database\'s error its cause; any other error as it is', () => {
    const thrown = (error: unknown) => {
      try {
        throwAsDiskFull(error);
      } catch (caught) {
        return caught;
      }
    };
    const full = thrown(extend);
    expect(full).toBeInstanceOf(DiskFullError);
    expect(full).toMatchObject({ name: 'DiskFullError', message: `PostgreSQL's disk is full: ${extend.message}`, cause: extend });
    expect(thrown(full)).toBe(full);
    const other = serverError('duplicate key value violates unique constraint', '23505');
    expect(thrown(other)).toBe(other);
  });

  it('is one line on the command line saying what to do', () => {
    expect(describeFailure(initFile, { databaseUrlFrom: 'DATABASE_URL' })).toBe(
      "PostgreSQL's disk is full (could not write init file) (from DATABASE_URL): nothing of the failed write was stored; free space on the server's disk (or grow its volume), then run the command again",
    );
    expect(describeFailure(new DiskFullError(`PostgreSQL's disk is full: ${extend.message}`, { cause: extend }), {})).toBe(
      `PostgreSQL's disk is full (${extend.message}): nothing of the failed write was stored; free space on the server's disk (or grow its volume), then run the command again`,
    );
    expect(describeFailure(local, {})).toBe('cannot write /var/digests/d.json: no space left on device: free space on its disk, then run the command again');
  });
});
