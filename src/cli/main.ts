#!/usr/bin/env node
import { runCli } from './run-cli.js';

// A reader that went away (`os-audit events s1 | head`) ends the command, as SIGPIPE ends a C tool, without a stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit(0);
});

process.exitCode = await runCli(process.argv.slice(2), {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});
