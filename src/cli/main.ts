#!/usr/bin/env node
import { runCli } from './run-cli.js';

// A reader that went away (`os-audit events s1 | head`) ends the command, as SIGPIPE ends a C tool, without a stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit(0);
});

// No top-level await: the bundle of the CLI is a CommonJS script (see scripts/bundle-cli.ts).
void runCli(process.argv.slice(2), {
  // A getter: opening standard input costs a few milliseconds, and only `append` reads it.
  get stdin() {
    return process.stdin;
  },
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
}).then((code) => {
  // Exits once the output is written rather than when the event loop empties: the database's
  // sockets would keep the process until the server hangs up (see withDatabase).
  let unflushed = 2;
  const exitWhenFlushed = () => {
    unflushed -= 1;
    if (unflushed === 0) process.exit(code);
  };
  process.stdout.write('', exitWhenFlushed);
  process.stderr.write('', exitWhenFlushed);
});
