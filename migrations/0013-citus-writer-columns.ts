import { type Kysely, sql } from 'kysely';
import { storeIsDistributed } from '../src/db/distributed-store.js';

/**
 * On Citus, the writer role may insert every column of `session_events` and `sessions`, not
 * only the ones os-audit's writers name. The coordinator evaluates the columns' defaults
 * (`position`, `transaction_id`, `recorded_at`, the heads' times) itself. It sends the shards an
 * INSERT that names every column, and the workers check it against the role's column grants.
 * With 0005's grants alone, `os-audit append` and `import` as a member of `os_audit_writer`
 * fail with `permission denied for table sessions_<shard>`. What the role cannot do stays as
 * on one server: no UPDATE of history, no DELETE, no TRUNCATE. What it can do more is set
 * those columns itself when it writes SQL by hand; os-audit never does, and the projector on
 * Citus reads by seq, not by position or transaction id. On a plain PostgreSQL database this
 * migration does nothing.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!(await storeIsDistributed(db))) return;
  await sql`GRANT INSERT ON session_events, sessions TO os_audit_writer`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!(await storeIsDistributed(db))) return;
  // Back to 0005's column grants: a table-level REVOKE takes the column grants too.
  await sql`REVOKE INSERT ON session_events, sessions FROM os_audit_writer`.execute(db);
  await sql`GRANT INSERT (session_id, seq, kind, turn, payload, payload_text, validated) ON session_events TO os_audit_writer`.execute(db);
  await sql`GRANT INSERT (session_id, last_seq) ON sessions TO os_audit_writer`.execute(db);
}
