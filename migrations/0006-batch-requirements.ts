import { type Kysely, sql } from 'kysely';

/**
 * `os_audit_require(condition, reason)`: true, or an error (SQLSTATE `OA001`, the reason as its
 * message) when the condition does not hold. Plain SQL has no way to fail on purpose; the
 * projector's one-round-trip batch needs one, so that a script whose batch turns out to need
 * the careful path stops before it commits anything.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION os_audit_require(condition boolean, reason text) RETURNS boolean
    LANGUAGE plpgsql AS $$
    BEGIN
      IF condition IS NOT TRUE THEN
        RAISE EXCEPTION USING ERRCODE = 'OA001', MESSAGE = reason;
      END IF;
      RETURN true;
    END
    $$`.execute(db);
  await sql`GRANT EXECUTE ON FUNCTION os_audit_require(boolean, text) TO os_audit_projector`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP FUNCTION os_audit_require(boolean, text)`.execute(db);
}
