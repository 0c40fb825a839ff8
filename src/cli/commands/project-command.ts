// fs.promises, read when used: a dynamic import of a node: module has no loader in the bundled CLI.
import { promises as fs } from 'node:fs';
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../../db/schema.js';
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from '../../observability/log-settings.js';
import type { ProjectorMonitor } from '../../observability/projector-monitor.js';
import type { Projection } from '../../projector/projection.js';
import { DEFAULT_BATCH_SIZE } from '../../projector/default-batch-size.js';
import { type CliIo, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';
import { environmentSetting } from '../environment-setting.js';
import { integerOption } from '../parse-integer-option.js';
import { DEFAULT_METRICS_HOST, DEFAULT_METRICS_PORT, listenError, METRICS_HOST_ENV, METRICS_PORT_ENV, parseMetricsPort } from '../server-address.js';
import { chooseProjections, commandProjections } from '../projection-options.js';
import { resolveServerAccess, type ServerAccessFlags, withServerAccessOptions } from '../server-access.js';
import type { HttpAccess } from '../../observability/http-access.js';
import { countOf } from '../../text/count-of.js';
import type { CatchUpProgress } from '../catch-up-progress.js';
import { aboveProgress } from '../progress-line.js';

export { DEFAULT_METRICS_PORT } from '../server-address.js';

/** A setting of the daemon: a flag, or else an environment variable, or else a default. */
interface Setting<T> {
  flags: string;
  env: string;
  description: string;
  parse: (text: string) => T;
  defaultValue: T;
  /** The default as `--help` shows it, when the value alone does not say it. */
  shownDefault?: string;
}

const setting = <T>(definition: Setting<T>): Setting<T> => definition;

const SETTINGS = {
  batchSize: setting({
    flags: '--batch-size <events>',
    env: 'OS_AUDIT_BATCH_SIZE',
    description: 'most events read per batch',
    parse: integerOption(1),
    defaultValue: DEFAULT_BATCH_SIZE,
  }),
  pollInterval: setting({
    flags: '--poll-interval <ms>',
    env: 'OS_AUDIT_POLL_INTERVAL_MS',
    description: 'longest wait between looks at the log when no append is notified',
    parse: integerOption(10),
    defaultValue: 1000,
  }),
  leaseTtl: setting({
    flags: '--lease-ttl <ms>',
    env: 'OS_AUDIT_LEASE_TTL_MS',
    description: 'lease time to live: a standby takes over this long after the leader dies',
    parse: integerOption(500),
    defaultValue: 5000,
  }),
  directUrl: setting<string | undefined>({
    flags: '--direct-url <url>',
    env: 'OS_AUDIT_DIRECT_DATABASE_URL',
    description: 'a connection straight to PostgreSQL for LISTEN, when the database URL goes through a pooler in transaction mode (PgBouncer); batches still go through the database URL',
    parse: (text) => text,
    defaultValue: undefined,
    shownDefault: 'the database URL',
  }),
  metricsPort: setting<number | 'off'>({
    flags: '--metrics-port <port>',
    env: METRICS_PORT_ENV,
    description: 'port of /metrics, /healthz and /readyz: 0 picks a free one (logged), off serves none',
    parse: parseMetricsPort,
    defaultValue: DEFAULT_METRICS_PORT,
    shownDefault: `${DEFAULT_METRICS_PORT}; with --once, none unless this flag is given`,
  }),
  metricsHost: setting({
    flags: '--metrics-host <host>',
    env: METRICS_HOST_ENV,
    description: 'address the metrics server listens on (0.0.0.0: every interface, e.g. in a container)',
    parse: (text) => text,
    defaultValue: DEFAULT_METRICS_HOST,
  }),
  logLevel: setting<LogLevel>({
    flags: '--log-level <level>',
    env: 'OS_AUDIT_LOG_LEVEL',
    description: `least level logged: ${LOG_LEVELS.join(', ')}`,
    parse: oneOf(LOG_LEVELS),
    defaultValue: 'info',
  }),
  digestDir: setting<string | undefined>({
    flags: '--digest-dir <dir>',
    env: 'OS_AUDIT_DIGEST_DIR',
    description: 'the leader writes a digest of the log into this folder every --digest-every (see os-audit digest)',
    parse: (text) => text,
    defaultValue: undefined,
    shownDefault: 'none',
  }),
  digestEvery: setting({
    flags: '--digest-every <ms>',
    env: 'OS_AUDIT_DIGEST_EVERY_MS',
    description: 'how often the leader writes a digest into --digest-dir',
    parse: integerOption(1000),
    defaultValue: 3_600_000,
  }),
  digestKey: setting<string | undefined>({
    flags: '--digest-key <file>',
    env: 'OS_AUDIT_DIGEST_KEY',
    description: "the Ed25519 private key (PEM) that signs the daemon's digests",
    parse: (text) => text,
    defaultValue: undefined,
    shownDefault: 'none: not signed',
  }),
  logFormat: setting<LogFormat | undefined>({
    flags: '--log-format <format>',
    env: 'OS_AUDIT_LOG_FORMAT',
    description: 'logs on stderr as json lines or pretty text',
    parse: oneOf(LOG_FORMATS),
    defaultValue: undefined,
    shownDefault: 'pretty on a terminal, else json',
  }),
};

type SettingName = keyof typeof SETTINGS;

/** The daemon's settings, each from its flag, or else its environment variable, or else its default. */
export type ProjectSettings = { [Name in SettingName]: ReturnType<(typeof SETTINGS)[Name]['parse']> };

/** What commander parsed: the settings given as flags, and the rest. */
export type ProjectFlags = Partial<ProjectSettings> & ServerAccessFlags & { once?: boolean; skipInvalid?: boolean; owner?: string; projection?: string };

/**
 * Resolves the daemon's settings: a flag wins over its environment variable, which wins over
 * the default; an empty variable counts as unset. `project --once` serves metrics only when
 * `--metrics-port` is given (not from the environment, which it may share with a daemon).
 * Throws a usage error (exit code 2) naming the variable when one is invalid.
 *
 * @example
 * ```ts
 * resolveProjectSettings({ batchSize: 500 }, { OS_AUDIT_BATCH_SIZE: '100', OS_AUDIT_LOG_LEVEL: 'debug' });
 * // { batchSize: 500, logLevel: 'debug', pollInterval: 1000, metricsPort: 9464, ... }
 * ```
 */
export function resolveProjectSettings(flags: ProjectFlags, env: NodeJS.ProcessEnv): ProjectSettings {
  const resolve = <Name extends SettingName>(name: Name): ProjectSettings[Name] => {
    const given = flags[name];
    if (given !== undefined) return given as ProjectSettings[Name];
    if (name === 'metricsPort' && flags.once) return 'off' as ProjectSettings[Name];
    const definition = SETTINGS[name] as Setting<ProjectSettings[Name]>;
    return environmentSetting(env, definition.env, definition.parse) ?? definition.defaultValue;
  };
  return {
    batchSize: resolve('batchSize'),
    pollInterval: resolve('pollInterval'),
    leaseTtl: resolve('leaseTtl'),
    directUrl: resolve('directUrl'),
    metricsPort: resolve('metricsPort'),
    metricsHost: resolve('metricsHost'),
    logLevel: resolve('logLevel'),
    logFormat: resolve('logFormat'),
    digestDir: resolve('digestDir'),
    digestEvery: resolve('digestEvery'),
    digestKey: resolve('digestKey'),
  };
}

export function registerProjectCommand(program: Command, io: CliIo): void {
  const command = program
    .command('project')
    .description("run the projector daemon: fold new events into every projection's tables as they are appended")
    .option('--once', 'catch up with every event committed before the start, then exit');
  withProjectOptions(command)
    .addHelpText(
      'after',
      '\nEach projection has its own checkpoint and lease: one slow or stopped projection holds no other back.\n' +
        'Any number of daemons may run: for each projection one holds the lease and writes, the others stand by. SIGINT or\n' +
        'SIGTERM stops the daemon cleanly: the current batch finishes or rolls back, the lease is released,\n' +
        'exit code 0. Logs go to stderr; `project --once` prints its summary on stdout.',
    )
    .action(async (flags: ProjectFlags, command: Command) => {
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const settings = resolveProjectSettings(flags, io.env);
      const access = await resolveDaemonAccess(flags, settings, io.env);
      const projections = chooseProjections(await commandProjections(command, io), flags.projection);
      await runProjectDaemon({ url, projections, flags, settings, access, io });
    });
}

/**
 * Who the daemon's server answers (see `resolveServerAccess`); nothing to check when it serves
 * nothing (`--metrics-port off`, `--once` alone).
 *
 * @example
 * ```ts
 * const access = await resolveDaemonAccess(flags, resolveProjectSettings(flags, io.env), io.env);
 * ```
 */
export async function resolveDaemonAccess(flags: ProjectFlags, settings: ProjectSettings, env: NodeJS.ProcessEnv): Promise<HttpAccess> {
  return settings.metricsPort === 'off' ? {} : resolveServerAccess(flags, env, settings.metricsHost);
}

/**
 * Adds the daemon's flags to `command`: `--projection`, each setting (with its variable and
 * default in `--help`), the server's access flags, `--skip-invalid` and `--owner`. `project`
 * and `up` share them.
 *
 * @example
 * ```ts
 * withProjectOptions(program.command('up')).action(async (flags: ProjectFlags) => resolveProjectSettings(flags, process.env));
 * ```
 */
export function withProjectOptions(command: Command): Command {
  command.option('--projection <name>', 'only this projection (default: all)');
  for (const definition of Object.values(SETTINGS) as Setting<unknown>[]) {
    const shown = definition.shownDefault ?? String(definition.defaultValue);
    command.addOption(new Option(definition.flags, `${definition.description} (env ${definition.env}; default ${shown})`).argParser(definition.parse));
  }
  return withServerAccessOptions(command)
    .option('--skip-invalid', 'set events a projection cannot read aside in projection_errors instead of stopping their session (and take up again sessions stopped at one)')
    .option('--owner <name>', "this projector's name in the lease (default host:pid:random)");
}

/** What the daemon runs with: the database, its projections, its flags and settings. */
export interface ProjectDaemonOptions {
  url: string;
  projections: readonly Projection[];
  flags: ProjectFlags;
  settings: ProjectSettings;
  /** Who its metrics and console server answers (see `resolveDaemonAccess`). */
  access: HttpAccess;
  io: CliIo;
  /**
   * Told once the daemon is about to fold, its metrics server listening (its URL, e.g.
   * `http://127.0.0.1:9464`; undefined with `--metrics-port off`); not with `--once`.
   */
  onStarted?: (metricsUrl: string | undefined) => Promise<void>;
}

/**
 * Runs the projector daemon (or, with `flags.once`, catches up and prints the summary) until
 * SIGINT or SIGTERM.
 *
 * @example
 * ```ts
 * await runProjectDaemon({ url, projections, flags, settings: resolveProjectSettings(flags, io.env), io, onStarted: async (metricsUrl) => console.log(`up: ${metricsUrl}`) });
 * ```
 */
export async function runProjectDaemon({ url, projections, flags, settings, access, io, onStarted }: ProjectDaemonOptions): Promise<void> {
  const { createLogger } = await import('../../observability/create-logger.js');
  // --once may draw its progress on stderr.
  const log = createLogger({ level: settings.logLevel, format: settings.logFormat, stream: flags.once ? aboveProgress(io.stderr) : io.stderr });
  const stop = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    log.info({ event: 'signal', signal }, `${signal}: finishing the batch in flight, then releasing the lease`);
    stop.abort();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    // A connection per projection's batches, one for the leases and status reads, one for the metrics' reads.
    const connections = projections.length + (settings.metricsPort === 'off' ? 1 : 2);
    await withDatabase(url, (db) => project(db, { url, projections, flags, settings, access, log, io, signal: stop.signal, onStarted }), { connections });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

interface ProjectRun extends ProjectDaemonOptions {
  log: Logger;
  signal: AbortSignal;
}

/** Runs the daemon (or `--once`): a projector per projection, with its logs and, unless off, the metrics and health server. */
async function project(db: Kysely<DB>, { url, projections, flags, settings, access, log, io, signal, onStarted }: ProjectRun): Promise<void> {
  const [{ ProjectorLog }, { defaultOwner, Projector }] = await Promise.all([import('../../observability/projector-log.js'), import('../../projector/projector.js')]);
  let monitor: ProjectorMonitor | undefined;
  const owner = flags.owner ?? defaultOwner();
  const ownerLog = log.child({ owner });
  let progress: CatchUpProgress | undefined;
  // The leader of the first projection writes the digests.
  let leading = false;
  const runs = projections.map((projection, index) => {
    const projectionLog = new ProjectorLog(ownerLog.child({ projection: projection.name }), { summarizeBatches: !flags.once });
    const projector = new Projector(db, projection, {
      batchSize: settings.batchSize,
      pollIntervalMs: settings.pollInterval,
      leaseTtlMs: settings.leaseTtl,
      skipInvalid: flags.skipInvalid,
      owner,
      listenUrl: flags.once ? undefined : (settings.directUrl ?? url),
      onEvent: (event) => {
        projectionLog.record(event);
        if (event.type === 'batch') progress?.record(event.result.windowCount);
        monitor?.record(projection.name, event);
        if (index === 0 && (event.type === 'leader' || event.type === 'standby' || event.type === 'idle')) {
          leading = event.type === 'leader' || (event.type === 'idle' && event.role === 'leader');
        }
      },
    });
    return { projection, projector, projectionLog };
  });
  try {
    if (settings.metricsPort !== 'off') {
      monitor = await serveMonitor(db, url, projections, owner, settings, settings.metricsPort, access, ownerLog);
      signal.addEventListener('abort', () => monitor?.stopping(), { once: true });
    }
    if (flags.once) {
      // Side by side: a projection far behind holds no other back.
      const { CatchUpProgress } = await import('../catch-up-progress.js');
      progress = await CatchUpProgress.start(db, io.stderr, ownerLog, projections.map((projection) => projection.name));
      const reports = await Promise.all(runs.map(({ projector }) => projector.catchUp(signal))).finally(() => progress?.done());
      for (const [i, report] of reports.entries()) {
        const at = report.checkpoint ? ` (checkpoint: transaction ${report.checkpoint.transactionId}, position ${report.checkpoint.position})` : '';
        const skipped = report.skipped > 0 ? `; ${countOf(report.skipped, 'event')} set aside in projection_errors` : '';
        const stopped = report.stopped > 0 ? `; ${countOf(report.stopped, 'session')} stopped (see os-audit status)` : '';
        const byHolder = report.foldedByLeaseHolder === undefined ? '' : `; the rest was folded by ${report.foldedByLeaseHolder}, which holds the lease`;
        await write(io.stdout, `${runs[i]!.projection.name}: projected ${countOf(report.eventsApplied, 'event')} in ${countOf(report.batches, 'batch', 'batches')}${skipped}${stopped}${byHolder}${at}\n`);
      }
      return;
    }
    const digests = settings.digestDir === undefined ? undefined : await startDigests(db, settings, () => leading, ownerLog);
    await onStarted?.(monitor?.url);
    const { batchSize, pollInterval: pollIntervalMs, leaseTtl: leaseTtlMs } = settings;
    const names = projections.map((projection) => projection.name);
    ownerLog.info(
      { event: 'started', projections: names, batchSize, pollIntervalMs, leaseTtlMs, skipInvalid: Boolean(flags.skipInvalid), metricsUrl: monitor?.url ?? null },
      `os-audit projector ${owner} started: ${names.join(', ')}`,
    );
    await Promise.all(runs.map(({ projector }) => projector.run(signal))).finally(() => digests?.stop());
    for (const { projectionLog } of runs) projectionLog.close();
    ownerLog.info({ event: 'stopped' }, 'os-audit projector stopped; leases released');
  } finally {
    for (const { projectionLog } of runs) projectionLog.close();
    await monitor?.close();
  }
}

/** The digests the leader writes into --digest-dir, signed with --digest-key. */
async function startDigests(db: Kysely<DB>, settings: ProjectSettings, leading: () => boolean, log: Logger): Promise<{ stop: () => Promise<void> }> {
  const [{ readPrivateKey }, { startDigestSchedule }] = await Promise.all([
    import('../../integrity/digest.js'),
    import('../../integrity/digest-schedule.js'),
  ]);
  const privateKey = settings.digestKey === undefined ? undefined : readPrivateKey(await fs.readFile(settings.digestKey, 'utf8'), settings.digestKey);
  return startDigestSchedule(db, { dir: settings.digestDir!, everyMs: settings.digestEvery, privateKey }, leading, log);
}

/** Starts the web console, metrics and health server (the console on a pool of its own); a port in use is the user's to fix. */
async function serveMonitor(
  db: Kysely<DB>,
  url: string,
  projections: readonly Projection[],
  owner: string,
  settings: ProjectSettings,
  port: number,
  access: HttpAccess,
  log: Logger,
): Promise<ProjectorMonitor> {
  const host = settings.metricsHost;
  // Loaded only here: a daemon without metrics (project --once) starts without prom-client or the console.
  const { startProjectorMonitor } = await import('../../observability/projector-monitor.js');
  const { CONSOLE_CONNECTIONS, createConsoleRoutes } = await import('../../console/console-routes.js');
  const { openDatabase } = await import('../../db/open-database.js');
  // The console reads on connections of its own: a page never waits for a batch, nor holds up a lease renewal.
  const consoleDb = openDatabase({ connectionString: url, applicationName: 'os-audit-console', maxConnections: CONSOLE_CONNECTIONS });
  try {
    const monitor = await startProjectorMonitor({
      db,
      projections: projections.map((projection) => projection.name),
      owner,
      host,
      port,
      leaseTtlMs: settings.leaseTtl,
      pollIntervalMs: settings.pollInterval,
      log,
      routes: createConsoleRoutes({ db: consoleDb, projections }),
      access,
    });
    log.info({ event: 'listening', url: monitor.url }, `serving the web console on ${monitor.url}/ and /metrics, /healthz and /readyz`);
    return {
      ...monitor,
      close: async () => {
        await monitor.close();
        await consoleDb.destroy();
      },
    };
  } catch (error) {
    await consoleDb.destroy();
    throw listenError(error, { host, port, what: 'metrics', hint: ', off for none' });
  }
}

function oneOf<const T extends readonly string[]>(choices: T): (text: string) => T[number] {
  return (text) => {
    if (!choices.includes(text)) throw new InvalidArgumentError(`expected one of ${choices.join(', ')}`);
    return text as T[number];
  };
}
