import { describe, expect, it } from 'vitest';
import { CliError } from '../../src/cli/cli-context.js';
import { DEFAULT_METRICS_PORT, resolveProjectSettings } from '../../src/cli/commands/project-command.js';
import { DEFAULT_BATCH_SIZE } from '../../src/projector/default-batch-size.js';
import { runCliInProcess } from '../support/run-cli-in-process.js';

const DEFAULTS = {
  batchSize: DEFAULT_BATCH_SIZE,
  pollInterval: 1000,
  leaseTtl: 5000,
  directUrl: undefined,
  metricsPort: DEFAULT_METRICS_PORT,
  metricsHost: '127.0.0.1',
  logLevel: 'info',
  logFormat: undefined,
  digestDir: undefined,
  digestEvery: 3_600_000,
  digestKey: undefined,
};

/** A database URL nothing listens on: these runs stop before connecting. */
const NOWHERE = 'postgres://postgres@127.0.0.1:1/nowhere';

function usageError(run: () => unknown): CliError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(CliError);
    expect((error as CliError).exitCode).toBe(2);
    return error as CliError;
  }
  throw new Error('expected a usage error');
}

describe('os-audit project settings', () => {
  it('has defaults for everything', () => {
    expect(resolveProjectSettings({}, {})).toEqual(DEFAULTS);
  });

  it('reads each setting from its environment variable', () => {
    const env = {
      OS_AUDIT_BATCH_SIZE: '500',
      OS_AUDIT_POLL_INTERVAL_MS: '250',
      OS_AUDIT_LEASE_TTL_MS: '3000',
      OS_AUDIT_DIRECT_DATABASE_URL: 'postgres://postgres@db:5432/os_audit',
      OS_AUDIT_METRICS_PORT: '9100',
      OS_AUDIT_METRICS_HOST: '0.0.0.0',
      OS_AUDIT_LOG_LEVEL: 'debug',
      OS_AUDIT_LOG_FORMAT: 'pretty',
      OS_AUDIT_DIGEST_DIR: '/var/lib/os-audit/digests',
      OS_AUDIT_DIGEST_EVERY_MS: '600000',
      OS_AUDIT_DIGEST_KEY: '/etc/os-audit/digest-key',
    };
    expect(resolveProjectSettings({}, env)).toEqual({
      batchSize: 500,
      pollInterval: 250,
      leaseTtl: 3000,
      directUrl: 'postgres://postgres@db:5432/os_audit',
      metricsPort: 9100,
      metricsHost: '0.0.0.0',
      logLevel: 'debug',
      logFormat: 'pretty',
      digestDir: '/var/lib/os-audit/digests',
      digestEvery: 600_000,
      digestKey: '/etc/os-audit/digest-key',
    });
  });

  it('lets a flag win over its variable, without even reading an invalid one; an empty variable is unset', () => {
    const env = { OS_AUDIT_BATCH_SIZE: 'lots', OS_AUDIT_LOG_LEVEL: 'debug', OS_AUDIT_LEASE_TTL_MS: '' };
    expect(resolveProjectSettings({ batchSize: 7, logLevel: 'warn' }, env)).toEqual({ ...DEFAULTS, batchSize: 7, logLevel: 'warn' });
  });

  it('serves metrics for --once only when --metrics-port is given, not from the environment', () => {
    expect(resolveProjectSettings({ once: true }, { OS_AUDIT_METRICS_PORT: '9100' }).metricsPort).toBe('off');
    expect(resolveProjectSettings({ once: true, metricsPort: 0 }, {}).metricsPort).toBe(0);
    expect(resolveProjectSettings({}, { OS_AUDIT_METRICS_PORT: 'off' }).metricsPort).toBe('off');
  });

  it.each([
    ['OS_AUDIT_BATCH_SIZE', '0', 'expected a whole number from 1'],
    ['OS_AUDIT_BATCH_SIZE', '12.5', 'expected a whole number from 1'],
    ['OS_AUDIT_POLL_INTERVAL_MS', '5', 'expected a whole number from 10'],
    ['OS_AUDIT_LEASE_TTL_MS', 'soon', 'expected a whole number from 500'],
    ['OS_AUDIT_METRICS_PORT', '65536', 'expected a port from 0 to 65535, or off'],
    ['OS_AUDIT_METRICS_PORT', 'none', 'expected a port from 0 to 65535, or off'],
    ['OS_AUDIT_LOG_LEVEL', 'INFO', 'expected one of fatal, error, warn, info, debug, trace, silent'],
    ['OS_AUDIT_LOG_FORMAT', 'text', 'expected one of json, pretty'],
  ])('refuses %s=%j as a usage error naming the variable', (variable, value, expected) => {
    expect(usageError(() => resolveProjectSettings({}, { [variable]: value })).message).toBe(`invalid ${variable}=${JSON.stringify(value)}: ${expected}`);
  });

  it('makes the CLI exit 2 on an invalid variable or flag, before connecting', async () => {
    const fromEnv = await runCliInProcess(['project'], { env: { DATABASE_URL: NOWHERE, OS_AUDIT_LEASE_TTL_MS: '10' } });
    expect(fromEnv).toMatchObject({ code: 2, stdout: '' });
    expect(fromEnv.stderr).toBe('os-audit: invalid OS_AUDIT_LEASE_TTL_MS="10": expected a whole number from 500\n');
    const fromFlag = await runCliInProcess(['project', '--metrics-port', '-1'], { env: { DATABASE_URL: NOWHERE } });
    expect(fromFlag.code).toBe(2);
    expect(fromFlag.stderr).toMatch(/option '--metrics-port <port>' argument '-1' is invalid\. expected a port from 0 to 65535, or off/);
  });

  it('lists every flag in --help with its variable and default', async () => {
    const help = await runCliInProcess(['project', '--help'], { env: { DATABASE_URL: NOWHERE } });
    expect(help.code).toBe(0);
    const text = help.stdout.replace(/\s+/g, ' ');
    for (const [flag, variable, shown] of [
      ['--batch-size <events>', 'OS_AUDIT_BATCH_SIZE', String(DEFAULT_BATCH_SIZE)],
      ['--poll-interval <ms>', 'OS_AUDIT_POLL_INTERVAL_MS', '1000'],
      ['--lease-ttl <ms>', 'OS_AUDIT_LEASE_TTL_MS', '5000'],
      ['--metrics-port <port>', 'OS_AUDIT_METRICS_PORT', '9464; with --once, none unless this flag is given'],
      ['--metrics-host <host>', 'OS_AUDIT_METRICS_HOST', '127.0.0.1'],
      ['--log-level <level>', 'OS_AUDIT_LOG_LEVEL', 'info'],
      ['--log-format <format>', 'OS_AUDIT_LOG_FORMAT', 'pretty on a terminal, else json'],
      ['--allowed-host <name>', 'OS_AUDIT_ALLOWED_HOSTS', 'none'],
      ['--auth-token-file <file>', 'OS_AUDIT_AUTH_TOKEN', 'none'],
    ]) {
      expect(text).toMatch(new RegExp(`${escape(flag!)} (?:(?! --[a-z]).)*\\(env ${variable}; default ${escape(shown!)}\\)`));
    }
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
