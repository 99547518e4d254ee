-- Hub_Client_Run_Tables: one client's run tables in the staging schema (procedure step 12), created per client apart
-- from the common schema (Hub_Plat_Common_Schema_Baseline_(build number).sql, applied first). <CLIENT_NAME_VALUE> is the
-- pipeline's client_name. Idempotent; tags replaced like the pipeline template's; names unquoted (folded to lower case).
-- Written by the export task (task/README.md describes a run). Statuses of _STATUS: PUBLISHED, FAILED (retried by
-- the next run), HELD_BACK (held by the strict CLS check: codes the CLS load sheet lacks), PENDING (released for the
-- next attempt), SET_ASIDE (refused permanently by as many runs as the parameter set_aside_after_runs says: no longer
-- retried until an operator runs 'hub-export retry'), SUPERSEDED (a newer message carries each of its employees),
-- DISCARDED ('hub-export discard'); a message without a _STATUS row has not been attempted yet.

-- Every message extracted, written here by the extract itself (the body is written once), so that at the end of every
-- run all its messages are here, published or not: _STATUS says (no row: not attempted yet). One row per message: a
-- failed message published by a later run keeps its row, archived_by then names that run.
CREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_ARCHIVE (
  message_id      uuid NOT NULL PRIMARY KEY,
  transaction_id  uuid NOT NULL,
  seq             bigint NOT NULL,
  hub_tenant_id   text NOT NULL,
  hub_destination text NOT NULL,
  country_code    text NOT NULL,
  record_count    integer NOT NULL,
  employee_ids    text[] NOT NULL,
  changed_through timestamp NOT NULL,
  body            text NOT NULL,
  created_at      timestamptz NOT NULL,
  -- The run that archived the message last: the one that extracted it, or the later one that published or retried it.
  archived_by     uuid NULL,
  archived_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS hub_<CLIENT_NAME_VALUE>_archive_tx_idx ON <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_ARCHIVE (transaction_id);

-- The run's work queue, ids only (the bodies are in _ARCHIVE): the messages of the run in progress not yet done
-- (published and their entities sent to ERS), and the failed and held-back ones it retries (queued again from
-- _ARCHIVE when it starts). Empty when no run is in progress.
-- message_id is derived from (transaction_id, seq) and never changes: retries and resumed runs reuse it.
CREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES (
  message_id      uuid NOT NULL PRIMARY KEY,
  transaction_id  uuid NOT NULL,
  seq             bigint NOT NULL,
  hub_tenant_id   text NOT NULL,
  hub_destination text NOT NULL,
  record_count    integer NOT NULL CHECK (record_count > 0),
  created_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (transaction_id, seq)
);
-- A queue created before it held ids only (the same build number, before any real install) held the bodies: those
-- still queued go to _ARCHIVE (where every body is now), then the queue loses the columns it no longer has.
DO $queue_ids_only$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_attribute
              WHERE attrelid = to_regclass('<STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES') AND attname = 'body' AND NOT attisdropped) THEN
    EXECUTE 'INSERT INTO <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_ARCHIVE
               (message_id, transaction_id, seq, hub_tenant_id, hub_destination, country_code, record_count, employee_ids, changed_through, body, created_at, archived_by)
             SELECT message_id, transaction_id, seq, hub_tenant_id, hub_destination, country_code, record_count, employee_ids, changed_through, body, created_at, transaction_id
               FROM <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES
             ON CONFLICT (message_id) DO NOTHING';
  END IF;
END
$queue_ids_only$;
ALTER TABLE <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES
  DROP COLUMN IF EXISTS body, DROP COLUMN IF EXISTS country_code, DROP COLUMN IF EXISTS employee_ids, DROP COLUMN IF EXISTS changed_through;

-- The outcome of publishing each message to the hub queue: PUBLISHED, or FAILED with the reason; attempts over all runs.
-- transaction_id is the run that last tried it: a message carries the transaction id of the run that publishes it
-- (queue properties, body header, ERS), so the PUBLISHED rows of a transaction are what the hub received under it.
CREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_STATUS (
  message_id      uuid NOT NULL PRIMARY KEY,
  transaction_id  uuid NOT NULL,
  hub_tenant_id   text NOT NULL,
  hub_destination text NOT NULL,
  status          text NOT NULL,
  attempts        integer NOT NULL DEFAULT 0,
  reason          text NULL,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  -- Runs whose broker refused it permanently (over the size limit, or a 4xx other than 401/403/408/409/429).
  refusals        integer NOT NULL DEFAULT 0,
  -- Of a message not published: its employees that no newer message carries yet (SUPERSEDED once none is left), and
  -- the newest message that carries one of the others.
  employee_ids    text[] NULL,
  superseded_by   uuid NULL
);
-- A table of an earlier build gets the columns (one statement each: the adoption check reads them so).
ALTER TABLE <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_STATUS ADD COLUMN IF NOT EXISTS refusals integer NOT NULL DEFAULT 0;
ALTER TABLE <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_STATUS ADD COLUMN IF NOT EXISTS employee_ids text[] NULL;
ALTER TABLE <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_STATUS ADD COLUMN IF NOT EXISTS superseded_by uuid NULL;
-- The statuses, as one named constraint (an earlier build had an unnamed one with fewer statuses).
DO $status_values$
DECLARE
  c record;
BEGIN
  FOR c IN SELECT conname FROM pg_catalog.pg_constraint
            WHERE conrelid = '<STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_STATUS'::regclass AND contype = 'c'
              AND pg_catalog.pg_get_constraintdef(oid) LIKE '%status%' AND conname <> lower('hub_<CLIENT_NAME_VALUE>_status_values') LOOP
    EXECUTE format('ALTER TABLE <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_STATUS DROP CONSTRAINT %I', c.conname);
  END LOOP;
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint
                  WHERE conrelid = '<STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_STATUS'::regclass AND conname = lower('hub_<CLIENT_NAME_VALUE>_status_values')) THEN
    ALTER TABLE <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_STATUS ADD CONSTRAINT hub_<CLIENT_NAME_VALUE>_status_values
      CHECK (status IN ('PENDING', 'PUBLISHED', 'FAILED', 'HELD_BACK', 'SET_ASIDE', 'SUPERSEDED', 'DISCARDED'));
  END IF;
END
$status_values$;
CREATE INDEX IF NOT EXISTS hub_<CLIENT_NAME_VALUE>_status_tx_idx ON <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_STATUS (transaction_id, status);
-- The failed and held-back messages the next run retries (the strict CLS check also looks the held ones up per batch).
CREATE INDEX IF NOT EXISTS hub_<CLIENT_NAME_VALUE>_status_fail_idx ON <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_STATUS (message_id) WHERE status = 'FAILED';
CREATE INDEX IF NOT EXISTS hub_<CLIENT_NAME_VALUE>_status_held_idx ON <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_STATUS (message_id) WHERE status = 'HELD_BACK';
-- Set-aside messages: listed by 'hub-export status'.
CREATE INDEX IF NOT EXISTS hub_<CLIENT_NAME_VALUE>_status_aside_idx ON <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_STATUS (message_id) WHERE status = 'SET_ASIDE';
-- The employees of the failed and set-aside messages, for the extract to find the ones a newer message supersedes
-- (only those rows are indexed: a published message costs the index nothing). Rows of an earlier build get theirs.
CREATE INDEX IF NOT EXISTS hub_<CLIENT_NAME_VALUE>_status_emp_idx ON <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_STATUS USING gin (employee_ids) WHERE status IN ('FAILED', 'SET_ASIDE');
UPDATE <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_STATUS s SET employee_ids = a.employee_ids
  FROM <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_ARCHIVE a
 WHERE a.message_id = s.message_id AND s.status = 'FAILED' AND s.employee_ids IS NULL;

-- Warehouse rows the extract holds back instead of publishing, one per employee_id: DUPLICATE_ID (the id appears in
-- more than one employee row of the tenants' scope), BLANK_ID (only white space), MAPPING_ERROR (the mapping SQL
-- failed on this employee alone: reason holds the database's message). While a row is here, each run looks at the
-- employee again whether or not it changed; once it maps cleanly it is published and leaves the table.
CREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_ROWS_HELD_BACK (
  employee_id     text NOT NULL PRIMARY KEY,
  kind            text NOT NULL CHECK (kind IN ('DUPLICATE_ID', 'BLANK_ID', 'MAPPING_ERROR')),
  reason          text NOT NULL,
  -- Employee rows with this id in the tenants' scope when it was last held back.
  copies          integer NOT NULL DEFAULT 1,
  first_held_by   uuid NOT NULL,
  first_held_at   timestamptz NOT NULL DEFAULT now(),
  -- The last run that held it back.
  held_by         uuid NOT NULL,
  held_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS hub_<CLIENT_NAME_VALUE>_held_run_idx ON <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_ROWS_HELD_BACK (held_by);

-- Index names fit 63 characters with a client name of 42 (the longest clientName). Build 20261122 named four of them
-- hub_CLIENT_messages_..., which PostgreSQL truncates: for a long client name three became one name and the fourth the
-- _ARCHIVE table's, so only one of them was created. Those indexes are dropped now that the names above exist (a
-- truncated one too, when it is an index: the table of the same name is left alone).
DO $earlier_index_names$
DECLARE
  old text;
BEGIN
  FOREACH old IN ARRAY ARRAY['hub_<CLIENT_NAME_VALUE>_messages_archive_tx_idx', 'hub_<CLIENT_NAME_VALUE>_messages_status_tx_idx',
                             'hub_<CLIENT_NAME_VALUE>_messages_status_failed_idx', 'hub_<CLIENT_NAME_VALUE>_messages_status_held_idx'] LOOP
    old := left(lower(old), 63);
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = lower('<STAGING_SCHEMA_ONLY_VALUE>') AND c.relname = old AND c.relkind = 'i') THEN
      EXECUTE format('DROP INDEX %I.%I', lower('<STAGING_SCHEMA_ONLY_VALUE>'), old);
    END IF;
  END LOOP;
END
$earlier_index_names$;

-- The start of the oldest transaction open in this database, other than the caller's: the run's upper bound stays
-- below it, so that a change a loader commits after the run read its rows is newer than the watermark
-- (task/README.md, "Change capture"). SECURITY DEFINER: it sees every session as the role that applied this file does
-- (a superuser, rds_superuser or pg_read_all_stats), while the task's own role only ever learns this one time and who
-- holds it (no query text). hidden_sessions counts the sessions of the database even that role cannot see.
CREATE OR REPLACE FUNCTION <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_OLDEST_XACT()
  RETURNS TABLE (xact_start timestamptz, pid integer, application_name text, usename text, hidden_sessions integer)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $oldest_transaction$
  WITH sessions AS (
    SELECT a.xact_start, a.pid, a.application_name, a.usename::text AS usename, a.backend_type
      FROM pg_catalog.pg_stat_activity a
     WHERE a.datid = (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())
       AND a.pid <> pg_catalog.pg_backend_pid() AND a.usesysid IS NOT NULL
  )
  SELECT o.xact_start, o.pid, o.application_name, o.usename, (SELECT count(*)::int FROM sessions WHERE backend_type IS NULL)
    FROM (SELECT 1) one
    LEFT JOIN LATERAL (SELECT * FROM sessions WHERE backend_type = 'client backend' AND xact_start IS NOT NULL ORDER BY xact_start LIMIT 1) o ON true
$oldest_transaction$;
