-- Hub_Plat_Common_Schema_Baseline: the common schema of the hub pipelines in the staging schema, and the per-client
-- tables of a run. Idempotent: applying it again changes nothing. Tags are replaced like the pipeline template's.
-- Names are unquoted on purpose: PostgreSQL folds them to lower case, so HUB_INTAKE_JOB and hub_intake_job both work.

CREATE SCHEMA IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>;

-- One record per hub API per tenant (procedure step 5.2).
CREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_API_CONFIG (
  hub_api_name         text NOT NULL CHECK (hub_api_name IN ('ERS', 'CFG', 'HRSYS')),
  hub_api_url          text NOT NULL CHECK (hub_api_url LIKE '%/api/'),
  hub_environment_name text NOT NULL,
  hub_region           text NOT NULL CHECK (hub_region IN ('US', 'EU', 'APAC')),
  hub_tenant_id        text NOT NULL CHECK (hub_tenant_id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'),
  PRIMARY KEY (hub_tenant_id, hub_api_name)
);

-- Platform tenants of a client and their hub tenants (procedure step 5.3).
CREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_PLAT_CONFIG (
  plat_region        text NOT NULL,
  plat_client_name   text NOT NULL CHECK (plat_client_name = upper(plat_client_name)),
  codebase           text NOT NULL,
  gbl_or_us          text NOT NULL,
  secure_view_source text NULL,
  connector_id       text NULL,
  hub_destination    text NOT NULL,
  hub_tenant_code    text NOT NULL,
  hub_tenant_id      text NOT NULL CHECK (hub_tenant_id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'),
  PRIMARY KEY (plat_client_name, hub_tenant_id),
  UNIQUE (plat_client_name, plat_region)
);

-- One row per finished job (procedure step 10): found by job_name, identified by transaction_id.
CREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_INTAKE_JOB (
  job_name         text NOT NULL,
  transaction_id   uuid NOT NULL PRIMARY KEY,
  plat_client_name text NOT NULL,
  status           text NOT NULL CHECK (status IN ('ExecutionCompleted', 'ExecutionFailed')),
  build_number     text NOT NULL,
  started_at       timestamptz NOT NULL,
  finished_at      timestamptz NOT NULL,
  extracted_count  integer NOT NULL DEFAULT 0,
  message_count    integer NOT NULL DEFAULT 0,
  published_count  integer NOT NULL DEFAULT 0,
  failed_count     integer NOT NULL DEFAULT 0,
  ers_entity_count integer NOT NULL DEFAULT 0,
  error            text NULL
);
CREATE INDEX IF NOT EXISTS hub_intake_job_job_name_idx ON <STAGING_SCHEMA_ONLY_VALUE>.HUB_INTAKE_JOB (job_name, finished_at DESC);

-- Where the next incremental extract of a tenant/country starts; idl_date when there is no row yet.
CREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_EXPORT_WATERMARK (
  plat_client_name text NOT NULL,
  hub_tenant_id    text NOT NULL,
  country_code     text NOT NULL,
  changed_through  timestamp NOT NULL,
  transaction_id   uuid NOT NULL,
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (plat_client_name, hub_tenant_id, country_code)
);

-- Runs that have started and not finished: the next run resumes the transaction found here.
CREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_EXPORT_RUN (
  transaction_id   uuid NOT NULL PRIMARY KEY,
  job_name         text NOT NULL,
  plat_client_name text NOT NULL,
  phase            text NOT NULL,
  build_number     text NOT NULL,
  started_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX IF NOT EXISTS hub_export_run_one_per_client ON <STAGING_SCHEMA_ONLY_VALUE>.HUB_EXPORT_RUN (plat_client_name);

-- The messages of the run in progress; moved to _ARCHIVE when the run finishes.
CREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES (
  message_id      uuid NOT NULL PRIMARY KEY,
  transaction_id  uuid NOT NULL,
  seq             bigint NOT NULL,
  hub_tenant_id   text NOT NULL,
  hub_destination text NOT NULL,
  country_code    text NOT NULL,
  record_count    integer NOT NULL CHECK (record_count > 0),
  employee_ids    text[] NOT NULL,
  changed_through timestamp NOT NULL,
  body            text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (transaction_id, seq)
);

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
  archived_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS hub_<CLIENT_NAME_VALUE>_messages_archive_tx_idx ON <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_ARCHIVE (transaction_id);

-- The outcome of publishing each message to the hub queue.
CREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_STATUS (
  message_id      uuid NOT NULL PRIMARY KEY,
  transaction_id  uuid NOT NULL,
  hub_tenant_id   text NOT NULL,
  hub_destination text NOT NULL,
  status          text NOT NULL CHECK (status IN ('PENDING', 'PUBLISHED', 'FAILED')),
  attempts        integer NOT NULL DEFAULT 0,
  reason          text NULL,
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS hub_<CLIENT_NAME_VALUE>_messages_status_tx_idx ON <STAGING_SCHEMA_ONLY_VALUE>.HUB_<CLIENT_NAME_VALUE>_MESSAGES_STATUS (transaction_id, status);
