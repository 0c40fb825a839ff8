import { type Command, InvalidArgumentError, Option } from 'commander';
import { type CliIo, resolveDatabaseUrl, withDatabase, write } from '../cli-context.js';
import { environmentSetting } from '../environment-setting.js';
import { commandProjections } from '../projection-options.js';
import { resolveServerAccess, type ServerAccessFlags, withServerAccessOptions } from '../server-access.js';
import { DEFAULT_METRICS_HOST, DEFAULT_METRICS_PORT, isPortText, listenError, METRICS_HOST_ENV, METRICS_PORT_ENV } from '../server-address.js';

interface ConsoleFlags extends ServerAccessFlags {
  metricsPort?: number;
  metricsHost?: string;
}

export function registerConsoleCommand(program: Command, io: CliIo): void {
  const command = program
    .command('console')
    .description('serve the read-only web console alone (no projector), on the address of the daemon\'s /metrics')
    .addOption(
      new Option('--metrics-port <port>', `port to listen on; 0 picks a free one (env ${METRICS_PORT_ENV}; default ${DEFAULT_METRICS_PORT})`).argParser(parseConsolePort),
    )
    .addOption(new Option('--metrics-host <host>', `address to listen on; 0.0.0.0: every interface (env ${METRICS_HOST_ENV}; default ${DEFAULT_METRICS_HOST})`));
  withServerAccessOptions(command)
    .addHelpText(
      'after',
      '\nThe daemon (`os-audit project`, `os-audit up`) serves the same console next to /metrics; run this one to browse a\n' +
        'database without a daemon, e.g. as a member of os_audit_reader (then without event bodies). Ctrl-C stops it.',
    )
    .action(async (flags: ConsoleFlags, command: Command) => {
      const url = resolveDatabaseUrl(command.optsWithGlobals().databaseUrl, io);
      const port = flags.metricsPort ?? environmentSetting(io.env, METRICS_PORT_ENV, parseConsolePort) ?? DEFAULT_METRICS_PORT;
      const host = flags.metricsHost ?? (io.env[METRICS_HOST_ENV] || DEFAULT_METRICS_HOST);
      const access = await resolveServerAccess(flags, io.env, host);
      const projections = await commandProjections(command, io);
      // Loaded here, not with the command line: `os-audit --help` stays light.
      const { startObservabilityServer } = await import('../../observability/observability-server.js');
      const { CONSOLE_CONNECTIONS, createConsoleRoutes } = await import('../../console/console-routes.js');
      await withDatabase(
        url,
        async (db) => {
          const server = await startObservabilityServer(host, port, createConsoleRoutes({ db, projections }), access).catch((error: unknown) => {
            throw listenError(error, { host, port, what: 'the console' });
          });
          try {
            await write(io.stderr, `os-audit console on ${server.url}/ (Ctrl-C stops it)\n`);
            await untilStopped();
          } finally {
            await server.close();
          }
        },
        { connections: CONSOLE_CONNECTIONS },
      );
    });
}

/** A port, not `off` as for the daemon: the console has nothing else to serve. */
function parseConsolePort(text: string): number {
  if (!isPortText(text)) throw new InvalidArgumentError('expected a port from 0 to 65535 (the console cannot be off)');
  return Number(text);
}

/** Resolves at SIGINT or SIGTERM. */
function untilStopped(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}
