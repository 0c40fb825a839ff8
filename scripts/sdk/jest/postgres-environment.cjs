// The SDK's jest environment ('node'), which also ends the test file's PostgreSQL pool
// (postgres-logs.ts) once the file's tests and hooks are done: a hook of the file itself could
// still use the log after a root afterAll of a setup file ran.
// jest-environment-node is the SDK's: jest runs with the SDK's node/ directory as its cwd.
const { TestEnvironment } = require(require.resolve('jest-environment-node', { paths: [process.cwd()] }));

class PostgresLogEnvironment extends TestEnvironment {
  async teardown() {
    await this.global.__osAuditSdkLogs?.close();
    await super.teardown();
  }
}

module.exports = PostgresLogEnvironment;
