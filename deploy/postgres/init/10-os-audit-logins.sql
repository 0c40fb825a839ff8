-- The login users of the compose deployment, run by the postgres image when its data volume is
-- first created (/docker-entrypoint-initdb.d), before `os-audit migrate`:
--   os_audit_daemon   the projector daemon, member of os_audit_projector
--   os_audit_grafana  Grafana's data source, member of os_audit_reader
-- The group roles belong to os-audit's migration 0005, which grants them their privileges in
-- each migrated database; it runs after this script, so the groups are created here when
-- missing and the migration's grants land on them. Roles belong to the whole server: every
-- statement tolerates roles that exist already (a second run, or a concurrent creator).
-- The passwords are for a local deployment (the compose file publishes ports on 127.0.0.1 only);
-- change them with ALTER ROLE before exposing the server.

DO $$
DECLARE
  role_name text;
BEGIN
  FOREACH role_name IN ARRAY ARRAY['os_audit_reader', 'os_audit_projector'] LOOP
    CONTINUE WHEN EXISTS (SELECT FROM pg_roles WHERE rolname = role_name);
    BEGIN
      EXECUTE format('CREATE ROLE %I NOLOGIN', role_name);
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
    END;
  END LOOP;
END
$$;

DO $$
DECLARE
  login record;
BEGIN
  FOR login IN
    SELECT * FROM (VALUES
      ('os_audit_daemon', 'os_audit_daemon', 'os_audit_projector'),
      ('os_audit_grafana', 'os_audit_grafana', 'os_audit_reader')
    ) AS logins (user_name, password, member_of)
  LOOP
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = login.user_name) THEN
      BEGIN
        EXECUTE format('CREATE ROLE %I LOGIN PASSWORD %L', login.user_name, login.password);
      EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
      END;
    END IF;
    IF NOT pg_has_role(login.user_name, login.member_of, 'MEMBER') THEN
      EXECUTE format('GRANT %I TO %I', login.member_of, login.user_name);
    END IF;
  END LOOP;
END
$$;
