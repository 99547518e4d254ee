/** Names of everything the procedure creates: tables, bucket keys, file names, secrets. One place for each. */
import type { StackConfig } from "./stackConfig";

// Tables of the staging schema (created unquoted, so PostgreSQL folds them to lower case).
export const TABLES = {
  apiConfig: "HUB_API_CONFIG",
  platConfig: "HUB_PLAT_CONFIG",
  intakeJob: "HUB_INTAKE_JOB",
  /** Per tenant/country: where the next incremental extract starts (idl_date on first load). */
  watermark: "HUB_EXPORT_WATERMARK",
  /** The run of a client that has started and not finished (what the next run resumes). */
  run: "HUB_EXPORT_RUN",
  /** One row per run outcome or operator action, with counts and details (e.g. unknown codes) in `detail`. */
  runHistory: "HUB_EXPORT_RUN_HISTORY",
} as const;

/**
 * The export task's access to the specification's tables, which the platform environment's other pipelines share: it
 * reads the config tables and only adds rows to HUB_INTAKE_JOB (and reads it), never changing or deleting a row of
 * theirs. Every other staging table is this project's own.
 */
export const SHARED_TABLE_ACCESS = {
  readOnly: [TABLES.apiConfig, TABLES.platConfig],
  appendOnly: [TABLES.intakeJob],
} as const;

/**
 * HUB_<CLIENT_NAME>_MESSAGES, _ARCHIVE and _STATUS; HUB_<CLIENT_NAME>_ROWS_HELD_BACK (warehouse rows the extract holds
 * back) and the function HUB_<CLIENT_NAME>_OLDEST_XACT() (the start of the oldest open transaction).
 */
export function clientTables(clientName: string) {
  const base = `HUB_${clientName}_MESSAGES`;
  return {
    messages: base,
    archive: `${base}_ARCHIVE`,
    status: `${base}_STATUS`,
    rowsHeldBack: `HUB_${clientName}_ROWS_HELD_BACK`,
    oldestXact: `HUB_${clientName}_OLDEST_XACT`,
  };
}

/** `PLATDB.staging` → `staging`: the pipeline parameter staging_schema_only. */
export function schemaOnly(qualified: string): string {
  return qualified.slice(qualified.indexOf(".") + 1);
}

export function databaseOf(qualified: string): string {
  return qualified.slice(0, qualified.indexOf("."));
}

// Bucket folders (specification: /templates/hub_hrsys_export and /Tools/hub_python_scripts). S3 keys have no leading /.
export const BUCKET_FOLDERS = {
  templates: "templates/hub_hrsys_export/",
  scripts: "Tools/hub_python_scripts/",
  /** The rendered pipelines (procedure steps 3 and 4), one per job name: what the task runs. */
  pipelines: "pipelines/hub_hrsys_export/",
  /** What the hub team loads or works through: the CLS load sheets and the hub checklist, one folder per job. */
  hubConfiguration: "hub-configuration/",
} as const;

/**
 * A job's hub-configuration folder, `hub-configuration/<JOB_NAME>/`: clients (and jobs) sharing a bucket never write,
 * guard or read each other's files there.
 */
export function hubConfigurationFolder(jobName: string): string {
  return `${BUCKET_FOLDERS.hubConfiguration}${jobName}/`;
}

/** Files of a job's hub-configuration folder. The run's unknown-code check reads the CSV sheet. */
export const HUB_CONFIGURATION_FILES = {
  clsCsv: "cls/CLS_LOAD_SHEET.csv",
  clsXlsx: "cls/CLS_LOAD_SHEET.xlsx",
  checklistMarkdown: "HUB_CHECKLIST.md",
  checklistJson: "HUB_CHECKLIST.json",
} as const;

/** The rendered pipeline of a job: `pipelines/hub_hrsys_export/<JOB_NAME>.Json`, so one client's never overwrites another's. */
export function renderedPipelineKey(jobName: string): string {
  return `${BUCKET_FOLDERS.pipelines}${jobName}${TEMPLATE_FILE_EXTENSION}`;
}

export const TEMPLATE_FILE_PREFIX = "HRSYS_Employee_HUB_Pipeline_Baseline_";
export const TEMPLATE_FILE_EXTENSION = ".Json";
export const BASELINE_NAME_PREFIX = "Hub_Plat_Common_Schema_Baseline_";
/** A client's own run tables (messages, _ARCHIVE, _STATUS), apart from the common schema. */
export const CLIENT_RUN_TABLES_NAME_PREFIX = "Hub_Client_Run_Tables_";

export function templateFileName(buildNumber: string): string {
  return `${TEMPLATE_FILE_PREFIX}${buildNumber}${TEMPLATE_FILE_EXTENSION}`;
}

/** Files of the scripts folder. */
export const SCRIPT_FILES = {
  credentialsIni: "credentials.ini",
  tenantCredentials: "tenant_credentials.txt",
  credentialsIniTemplate: "credentials_template.ini",
  tenantCredentialsTemplate: "tenant_credentials_template.txt",
} as const;

/** Secrets Manager name of a connection record: `<prefix>/connection-strings/<System Name>`. */
export function connectionSecretName(prefix: string, systemName: string): string {
  return `${prefix}/connection-strings/${systemName}`;
}

/**
 * The SQL an operator runs to find a run (procedure step 10): HUB_INTAKE_JOB's rows of the job (the specification's
 * columns), newest first, with when each finished and its counts from our run history. Its names are schema-only
 * (stagingNamesNote).
 */
export function intakeJobQuery(config: Pick<StackConfig, "stagingSchema" | "jobName">): string {
  const s = schemaOnly(config.stagingSchema);
  return (
    `SELECT j.job_name, j.transaction_id, h.recorded_at AS finished_at, h.detail FROM ${s}.${TABLES.intakeJob} j ` +
    `LEFT JOIN ${s}.${TABLES.runHistory} h ON h.transaction_id::text = lower(j.transaction_id::text) AND h.event = 'ExecutionCompleted' ` +
    `WHERE j.job_name = '${config.jobName}' ORDER BY finished_at DESC NULLS LAST; ${stagingNamesNote(config.stagingSchema)}`
  );
}

/**
 * What every query this project prints says of its table names: the specification's step 12 names the tables
 * `<staging_schema>.HUB_<CLIENT_NAME>_MESSAGES_ARCHIVE`, and with staging_schema `PLATDB.staging` that is a
 * cross-database reference PostgreSQL refuses (the unquoted PLATDB folds to platdb, another database than PLATDB);
 * connected to the database, the schema alone names them.
 */
export function stagingNamesNote(stagingSchema: string): string {
  if (!stagingSchema.includes(".")) return `-- schema-only names (${stagingSchema}.<table>)`;
  const database = databaseOf(stagingSchema);
  const folded =
    database !== database.toLowerCase() ? ` (unquoted, ${database} reads as ${database.toLowerCase()})` : "";
  return `-- in database ${database}, schema-only names (${schemaOnly(stagingSchema)}.<table>): ${stagingSchema}.<table>, the specification's <staging_schema>.<table>, is a cross-database reference PostgreSQL refuses${folded}`;
}

/** Local connection store (the embedded default): one JSON file per record, mode 0600. */
export function connectionFileName(systemName: string): string {
  return `${systemName}.json`;
}
