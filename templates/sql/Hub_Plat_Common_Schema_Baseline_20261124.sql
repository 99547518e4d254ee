-- Hub_Plat_Common_Schema_Baseline: the common schema of the hub pipelines in the staging schema, shared by every client
-- of the platform environment. It renders the same for every client (no client tag): a client's own run tables are in
-- Hub_Client_Run_Tables_(build number).sql. Idempotent: applying it again changes nothing. Tags are replaced like the
-- pipeline template's. Names are unquoted on purpose: PostgreSQL folds them to lower case, so HUB_INTAKE_JOB and
-- hub_intake_job both work.

CREATE SCHEMA IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>;

-- ---------------------------------------------------------------------------------------------------------------
-- The specification's tables, shared with the platform environment's other hub pipelines and clients: created with
-- exactly the specification's columns when absent, adopted as they are when another pipeline created them. No key,
-- check or index is added to them: what this project relies on (one row per key of its own rows, the values' shapes)
-- it checks itself (providers/sqlRows.ts, the stack config's validation, the task's load). Whatever this project wants
-- beyond the specification's columns lives in its own tables below, keyed by transaction_id.

-- One record per hub API per tenant (procedure step 5.2).
CREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_API_CONFIG (
  hub_api_name         text NOT NULL,
  hub_api_url          text NOT NULL,
  hub_environment_name text NOT NULL,
  hub_region           text NOT NULL,
  hub_tenant_id        text NOT NULL
);

-- Platform tenants of a client and their hub tenants (procedure step 5.3).
CREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_PLAT_CONFIG (
  plat_region        text NOT NULL,
  plat_client_name   text NOT NULL,
  codebase           text NOT NULL,
  gbl_or_us          text NOT NULL,
  secure_view_source text NULL,
  connector_id       text NULL,
  hub_destination    text NOT NULL,
  hub_tenant_code    text NOT NULL,
  hub_tenant_id      text NOT NULL
);

-- One row per job that reached ExecutionCompleted (procedure step 10): found by job_name, identified by
-- transaction_id. The export task writes these two, and the columns of an earlier layout when the table has them
-- (core/intakeJob.ts); the run's details are its ExecutionCompleted row in HUB_EXPORT_RUN_HISTORY.
CREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_INTAKE_JOB (
  job_name       text NOT NULL,
  transaction_id text NOT NULL
);

-- ---------------------------------------------------------------------------------------------------------------
-- This project's own tables, written by the export task (task/README.md describes a run). Each client's messages,
-- _ARCHIVE and _STATUS tables are in Hub_Client_Run_Tables_(build number).sql.

-- Our own history of run outcomes and operator actions (ExecutionCompleted, ExecutionFailed, Stopped, Refused,
-- Reload), one row each: HUB_INTAKE_JOB holds only completed runs, as the specification states, and only its columns;
-- a run's counts, build number and times are in `detail` of its row here (one ExecutionCompleted row per transaction).
CREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_EXPORT_RUN_HISTORY (
  history_id bigserial PRIMARY KEY,
  plat_client_name text NOT NULL,
  job_name text NOT NULL,
  transaction_id uuid,
  event text NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now(),
  actor text,
  detail jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX IF NOT EXISTS hub_export_run_history_job_idx ON <STAGING_SCHEMA_ONLY_VALUE>.HUB_EXPORT_RUN_HISTORY (job_name, recorded_at DESC);
-- A completed run's details, found from its HUB_INTAKE_JOB row (whose transaction_id may be text or uuid).
CREATE INDEX IF NOT EXISTS hub_export_run_history_tx_idx ON <STAGING_SCHEMA_ONLY_VALUE>.HUB_EXPORT_RUN_HISTORY ((transaction_id::text));

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

-- The run of a client that has started and not finished: the next run resumes the transaction found here.
-- phase: EXTRACT, PUBLISH, ERS, then REPORT once finished in the database (only the HRSYS report is left).
CREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_EXPORT_RUN (
  transaction_id   uuid NOT NULL PRIMARY KEY,
  job_name         text NOT NULL,
  plat_client_name text NOT NULL,
  phase            text NOT NULL CHECK (phase IN ('EXTRACT', 'PUBLISH', 'ERS', 'REPORT')),
  build_number     text NOT NULL,
  -- Runs that worked on this transaction (1 + resumes).
  attempts         integer NOT NULL DEFAULT 1,
  started_reported boolean NOT NULL DEFAULT false,
  -- Changes up to this time belong to the run (the database time less change_lag_seconds, kept below the start of the
  -- oldest open transaction: task/README.md); the watermarks of the tenants/countries scanned advance to it.
  upper_bound      timestamp NOT NULL,
  -- Set when finished in the database: the intake job's status and counts, still to be reported to HRSYS.
  final_status     text NULL CHECK (final_status IN ('ExecutionCompleted', 'ExecutionFailed')),
  final_counts     jsonb NULL,
  started_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX IF NOT EXISTS hub_export_run_one_per_client ON <STAGING_SCHEMA_ONLY_VALUE>.HUB_EXPORT_RUN (plat_client_name);

-- The extract of the run in progress, in parts (employee id ranges) mapped side by side; each part resumes at its
-- cursor. seq of a part's messages starts at part * 10^12.
CREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_EXPORT_RUN_PART (
  transaction_id uuid NOT NULL REFERENCES <STAGING_SCHEMA_ONLY_VALUE>.HUB_EXPORT_RUN ON DELETE CASCADE,
  part           integer NOT NULL,
  -- Employee ids after first_after, up to and including last_id (NULL: to the end).
  first_after    text NOT NULL,
  last_id        text NULL,
  cursor_id      text NOT NULL,
  next_seq       bigint NOT NULL,
  messages       integer NOT NULL DEFAULT 0,
  employees      integer NOT NULL DEFAULT 0,
  -- [tenant id, country code] pairs scanned: their watermarks advance when the run finishes.
  pairs          jsonb NOT NULL DEFAULT '[]',
  done           boolean NOT NULL DEFAULT false,
  -- records_per_hub_message > 1: employees of the part's last messages that are not full yet, written with the next
  -- chunk (or, once every part is done, with the other parts' in the run's last messages).
  carry          text[] NOT NULL DEFAULT '{}',
  PRIMARY KEY (transaction_id, part)
);
ALTER TABLE <STAGING_SCHEMA_ONLY_VALUE>.HUB_EXPORT_RUN_PART ADD COLUMN IF NOT EXISTS carry text[] NOT NULL DEFAULT '{}';

-- Per tenant, what the run in progress has done so far: messages leave the client's work queue as they are published
-- and sent to ERS, not all at the end, and these are the counts of its intake job.
CREATE TABLE IF NOT EXISTS <STAGING_SCHEMA_ONLY_VALUE>.HUB_EXPORT_RUN_TENANT (
  transaction_id uuid NOT NULL REFERENCES <STAGING_SCHEMA_ONLY_VALUE>.HUB_EXPORT_RUN ON DELETE CASCADE,
  hub_tenant_id  text NOT NULL,
  messages       integer NOT NULL DEFAULT 0,
  -- Of those, messages of earlier transactions (failed then, published by this run).
  retried        integer NOT NULL DEFAULT 0,
  entities       integer NOT NULL DEFAULT 0,
  PRIMARY KEY (transaction_id, hub_tenant_id)
);
