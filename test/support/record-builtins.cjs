// Preloaded (node --require) by test/cli/bin.int.spec.ts: writes the built-in modules the
// process loaded to $RECORD_BUILTINS_TO when it exits.
process.once('exit', () => require('node:fs').writeFileSync(process.env.RECORD_BUILTINS_TO, process.moduleLoadList.join('\n')));
