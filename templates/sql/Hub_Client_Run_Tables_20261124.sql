-- Hub_Client_Run_Tables: one client's run tables in the staging schema (procedure step 12), created per client apart
-- from the common schema (Hub_Plat_Common_Schema_Baseline_(build number).sql, applied first). <CLIENT_NAME_VALUE> is the
-- pipeline's client_name. Idempotent; tags replaced like the pipeline template's; names unquoted (folded to lower case).
-- Written by the export task (task/README.md describes a run). Statuses of _STATUS: PUBLISHED, FAILED,
-- HELD_BACK (held by the strict CLS check: codes the CLS load sheet lacks), PENDING (released for the next attempt);
-- a message without a _STATUS row has not been attempted yet.

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
CREATE INDEX IF NOT EXISTS hub_<CLIENT_NAME_VALUE>_messages_archive_tx_idx ON <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_ARCHIVE (transaction_id);

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
CREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_STATUS (
  message_id      uuid NOT NULL PRIMARY KEY,
  transaction_id  uuid NOT NULL,
  hub_tenant_id   text NOT NULL,
  hub_destination text NOT NULL,
  status          text NOT NULL CHECK (status IN ('PENDING', 'PUBLISHED', 'FAILED', 'HELD_BACK')),
  attempts        integer NOT NULL DEFAULT 0,
  reason          text NULL,
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS hub_<CLIENT_NAME_VALUE>_messages_status_tx_idx ON <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_STATUS (transaction_id, status);
-- The failed and held-back messages the next run retries (the strict CLS check also looks the held ones up per batch).
CREATE INDEX IF NOT EXISTS hub_<CLIENT_NAME_VALUE>_messages_status_failed_idx ON <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_STATUS (message_id) WHERE status = 'FAILED';
CREATE INDEX IF NOT EXISTS hub_<CLIENT_NAME_VALUE>_messages_status_held_idx ON <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_STATUS (message_id) WHERE status = 'HELD_BACK';
