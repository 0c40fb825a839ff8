#!/usr/bin/env node
/**
 * The package's bin (`dist/cli/os-audit.cjs` once bundled): runs the bundled CLI beside it with
 * its V8 code cache (see {@link runWithCompileCache}).
 */
import { fileURLToPath } from 'node:url';
import { runWithCompileCache } from './compile-cache.js';

runWithCompileCache(fileURLToPath(new URL('./os-audit-bundle.cjs', import.meta.url)), process.argv[2] ?? '');
