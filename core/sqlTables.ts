/**
 * The tables of templates/sql and their columns, declared once: the baseline provider adopts a table that exists
 * already only when, with the SQL applied, it has these columns (providers/baseline.ts); test/providers/baseline.int.test.ts
 * applies the SQL to a real PostgreSQL and checks that it creates exactly these. A column added to a table is added
 * here and, in a new build-number file, with ALTER TABLE ... ADD COLUMN IF NOT EXISTS for databases that have the table.
 */
import { TABLES, clientTables, schemaOnly } from "./naming";

/** Column names by `schema.table`, lower case as PostgreSQL stores unquoted names, in the order the SQL creates them. */
export type SqlTables = Record<string, string[]>;

/** Hub_Plat_Common_Schema_Baseline_<BuildNumber>.sql: the specification's shared tables and this project's own. */
const COMMON_TABLES: Record<string, string[]> = {
  [TABLES.apiConfig]: ["hub_api_name", "hub_api_url", "hub_environment_name", "hub_region", "hub_tenant_id"],
  [TABLES.platConfig]: [
    ...["plat_region", "plat_client_name", "codebase", "gbl_or_us", "secure_view_source", "connector_id"],
    ...["hub_destination", "hub_tenant_code", "hub_tenant_id"],
  ],
  [TABLES.intakeJob]: ["job_name", "transaction_id"],
  [TABLES.runHistory]: [
    ...["history_id", "plat_client_name", "job_name", "transaction_id", "event", "recorded_at", "actor", "detail"],
  ],
  [TABLES.watermark]: [
    ...["plat_client_name", "hub_tenant_id", "country_code", "changed_through", "transaction_id", "updated_at"],
  ],
  [TABLES.run]: [
    ...["transaction_id", "job_name", "plat_client_name", "phase", "build_number", "attempts", "started_reported"],
    ...["upper_bound", "final_status", "final_counts", "started_at", "updated_at"],
  ],
  HUB_EXPORT_RUN_PART: [
    ...["transaction_id", "part", "first_after", "last_id", "cursor_id", "next_seq", "messages", "employees"],
    ...["pairs", "done", "carry"],
  ],
  HUB_EXPORT_RUN_TENANT: ["transaction_id", "hub_tenant_id", "messages", "retried", "entities"],
};

/** Hub_Client_Run_Tables_<BuildNumber>.sql: one client's messages, _ARCHIVE, _STATUS and held-back rows. */
function runTables(clientName: string): Record<string, string[]> {
  const t = clientTables(clientName);
  return {
    [t.archive]: [
      ...["message_id", "transaction_id", "seq", "hub_tenant_id", "hub_destination", "country_code", "record_count"],
      ...["employee_ids", "changed_through", "body", "created_at", "archived_by", "archived_at"],
    ],
    [t.messages]: [
      "message_id",
      "transaction_id",
      "seq",
      "hub_tenant_id",
      "hub_destination",
      "record_count",
      "created_at",
    ],
    [t.status]: [
      ...["message_id", "transaction_id", "hub_tenant_id", "hub_destination", "status", "attempts", "reason"],
      ...["updated_at", "refusals", "employee_ids", "superseded_by"],
    ],
    [t.rowsHeldBack]: [
      ...["employee_id", "kind", "reason", "copies", "first_held_by", "first_held_at", "held_by", "held_at"],
    ],
  };
}

function qualified(stagingSchema: string, tables: Record<string, string[]>): SqlTables {
  const schema = schemaOnly(stagingSchema);
  return Object.fromEntries(Object.entries(tables).map(([name, c]) => [`${schema}.${name}`.toLowerCase(), c]));
}

/** The common schema's tables, for a stack's staging schema (`PLATDB.staging` or `staging`). */
export function commonSchemaTables(stagingSchema: string): SqlTables {
  return qualified(stagingSchema, COMMON_TABLES);
}

/** A client's run tables. */
export function clientRunTables(stagingSchema: string, clientName: string): SqlTables {
  return qualified(stagingSchema, runTables(clientName));
}
