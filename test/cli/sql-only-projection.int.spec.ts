import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../support/run-cli-in-process.js';
import { useTestDatabase } from '../support/test-database.js';

/** A projection without an in-memory fold, through the commands a user runs on it. */
const testDb = useTestDatabase({ migrate: false });
const env = () => ({ DATABASE_URL: testDb.url, OS_AUDIT_PROJECTIONS: 'test/support/suspensions-projection.ts' });
const cli = (args: string[], stdin?: string) => runCliInProcess(args, { env: env(), stdin });

describe('a SQL-only projection', () => {
  it('is migrated and folded; verify says it has no fold to compare with; --at-seq says it cannot fold', async () => {
    expect((await cli(['migrate'])).code).toBe(0);
    const events = ['{"kind":"suspended","turn":1,"reason":"ask_user","pending_calls":[]}', '{"kind":"resumed","turn":2}', '{"kind":"suspended","turn":3,"reason":"ask_user","pending_calls":[]}'];
    expect((await cli(['append', 's1', '-'], `${events.join('\n')}\n`)).code).toBe(0);
    expect((await cli(['project', '--once', '--projection', 'suspensions'])).code).toBe(0);

    const snapshot = await cli(['snapshot', 's1', '--projection', 'suspensions']);
    expect(JSON.parse(snapshot.stdout)).toEqual({ suspended: 2 });

    const verified = await cli(['verify', '--all', '--projection', 'suspensions']);
    expect(verified.stdout).toBe(
      'suspensions: SQL-only, no in-memory fold to compare its snapshots with: checked only how far each session was folded and where it stopped\n' +
        'suspensions: verified 1 session: 0 differ from their log\n',
    );
    expect(verified.code).toBe(0);

    const atSeq = await cli(['snapshot', 's1', '--projection', 'suspensions', '--at-seq', '1']);
    expect(atSeq.code).not.toBe(0);
    expect(atSeq.stderr).toContain('projection suspensions is SQL-only: it has no in-memory fold to compute a snapshot at a seq');
  });
});
