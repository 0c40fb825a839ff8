// Prints what one `npm test` pass of .ci/run did: vitest's counts from its JSON report, and each
// failed test with the start of its failure, so that the end of a CI log says what failed even
// when only its last lines are kept.
// Usage: node scripts/ci/summarize-vitest-report.cjs NAME REPORT.json EXIT_CODE OUTPUT.log
const { existsSync, readFileSync } = require('node:fs');
const { relative } = require('node:path');

const [name, reportPath, exitCode, outputPath] = process.argv.slice(2);
if (!existsSync(reportPath)) {
  console.log(`npm test (${name}) exited ${exitCode} with no vitest report: tsc or vitest failed before any test ran (see the log above)`);
  process.exit(0);
}

const report = JSON.parse(readFileSync(reportPath, 'utf8'));
console.log(`vitest (${name}): ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${report.numPendingTests} skipped; exit code ${exitCode}`);

// The message and the project's own stack frames; vitest's and Node's frames say nothing here.
const firstLines = (text, count) =>
  text
    .split('\n')
    .filter((line) => !/^\s+(at|❯) .*(node_modules|<anonymous>|node:internal)/.test(line))
    .slice(0, count)
    .map((line) => `      ${line}`)
    .join('\n');

let failures = 0;
for (const file of report.testResults) {
  const path = relative(process.cwd(), file.name);
  const failed = file.assertionResults.filter((test) => test.status === 'failed');
  // A file that failed with no failed test did not load or failed in a hook.
  if (file.status === 'failed' && failed.length === 0) {
    failures++;
    console.log(`  FAILED ${path}\n${firstLines(file.message || '(no message)', 12)}`);
  }
  for (const test of failed) {
    failures++;
    console.log(`  FAILED ${path} > ${test.fullName}\n${firstLines(test.failureMessages.join('\n') || '(no message)', 12)}`);
  }
}
// Vitest's JSON report leaves out errors outside any test (an unhandled rejection, say): they are
// in the pass's output, from its "Unhandled Errors" heading to its closing counts.
const output = existsSync(outputPath) ? readFileSync(outputPath, 'utf8').replace(/\x1b\[[0-9;]*m/g, '') : '';
const unhandled = output.indexOf('Unhandled Error');
if (unhandled >= 0) {
  const end = output.indexOf(' Test Files ', unhandled);
  console.log(`  errors outside any test:\n${firstLines(output.slice(unhandled, end < 0 ? undefined : end).trimEnd(), 40)}`);
} else if (exitCode !== '0' && failures === 0) {
  console.log('  every test passed, yet vitest failed: see the log above');
}
