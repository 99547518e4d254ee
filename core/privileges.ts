/**
 * The export task's privileges, computed once: the Warehouse component grants them with @pulumi/postgresql, local
 * mode (local/install.ts) as SQL. Read the publish schema and the config tables, add rows to the shared intake
 * table, write the client's run tables; never change a schema.
 */
import { SHARED_TABLE_ACCESS } from "./naming";

export const RUN_TABLE_PRIVILEGES = ["DELETE", "INSERT", "SELECT", "UPDATE"];
/** On a shared table the task only adds rows to: never changing or deleting another pipeline's rows. */
export const APPEND_ONLY_PRIVILEGES = ["INSERT", "SELECT"];

/** What a SQL file creates, schema-qualified and lower-cased (providers/baseline.ts reads them from the SQL). */
export interface SqlObjects {
  tables: string[];
  sequences: string[];
}

/** The task's privileges on the staging schema's tables, derived from the SQL that creates them. */
export interface StagingGrants {
  readOnly: string[];
  /** Shared tables the task only adds rows to. */
  appendOnly: string[];
  readWrite: string[];
  /** Sequences of the run tables' serial columns: USAGE, so that the task can insert. */
  sequences: string[];
}

/**
 * Splits the staging tables into the shared ones the task only reads (HUB_API_CONFIG, HUB_PLAT_CONFIG) or only adds
 * rows to (HUB_INTAKE_JOB: INSERT and SELECT, never UPDATE or DELETE), as SHARED_TABLE_ACCESS says, and the run
 * tables the task writes.
 */
function stagingGrants(objects: SqlObjects, stagingSchema: string): StagingGrants {
  const prefix = `${stagingSchema.toLowerCase()}.`;
  const inStaging = (names: string[]) => names.filter((q) => q.startsWith(prefix)).map((q) => q.slice(prefix.length));
  const config = new Set(SHARED_TABLE_ACCESS.readOnly.map((t) => t.toLowerCase()));
  const appendOnly = new Set(SHARED_TABLE_ACCESS.appendOnly.map((t) => t.toLowerCase()));
  const tables = inStaging(objects.tables);
  return {
    readOnly: tables.filter((t) => config.has(t)).sort(),
    appendOnly: tables.filter((t) => appendOnly.has(t)).sort(),
    readWrite: tables.filter((t) => !config.has(t) && !appendOnly.has(t)).sort(),
    sequences: inStaging(objects.sequences).sort(),
  };
}

/** One grant to the task's role; `key` names its Warehouse resource (`<warehouse>/grant/<key>`). */
export interface TaskGrant {
  key: string;
  objectType: "database" | "schema" | "table" | "sequence";
  /** Which of the stack's schemas; none for the database. */
  schema?: "publish" | "staging";
  /** The tables or sequences; an empty list: every table of the schema. */
  objects?: string[];
  privileges: string[];
  /** The SQL file that creates the objects: the grant follows it. */
  createdBy?: "baseline" | "runTables";
}

/** SELECT on the tables `owner` (none: the admin login) creates later in the publish schema. */
export interface TaskDefaultPrivilege {
  key: string;
  owner?: string;
  privileges: string[];
}

export interface TaskPrivileges {
  grants: TaskGrant[];
  defaults: TaskDefaultPrivilege[];
  /** On the common schema's tables. */
  baseline: StagingGrants;
  /** On this client's run tables. */
  runTables: StagingGrants;
}

export function taskPrivileges(args: {
  stagingSchema: string;
  /** Roles besides the admin that create tables in the publish schema (hubExport:database.publishTableOwners). */
  publishTableOwners?: string[];
  baseline: SqlObjects;
  runTables: SqlObjects;
}): TaskPrivileges {
  const baseline = stagingGrants(args.baseline, args.stagingSchema);
  const runTables = stagingGrants(args.runTables, args.stagingSchema);
  const grants: TaskGrant[] = [
    { key: "connect", objectType: "database", privileges: ["CONNECT"] },
    { key: "publish-usage", objectType: "schema", schema: "publish", privileges: ["USAGE"] },
    // Every table of the publish schema: the extract reads the HR system's employees there.
    { key: "publish-tables", objectType: "table", schema: "publish", objects: [], privileges: ["SELECT"] },
    // USAGE and no CREATE: the task never changes the schema; the baseline does.
    { key: "staging-usage", objectType: "schema", schema: "staging", privileges: ["USAGE"], createdBy: "baseline" },
  ];
  // The run tables' grants are named like the common tables': a table moving between the files keeps its grant.
  for (const [createdBy, g] of [
    ["baseline", baseline],
    ["runTables", runTables],
  ] as const) {
    const staging = (objectType: "table" | "sequence", key: string, name: string, privileges: string[]): TaskGrant => ({
      key: `${key}/${name}`,
      objectType,
      schema: "staging",
      objects: [name],
      privileges,
      createdBy,
    });
    grants.push(
      ...g.readOnly.map((t) => staging("table", "staging", t, ["SELECT"])),
      ...g.appendOnly.map((t) => staging("table", "staging", t, APPEND_ONLY_PRIVILEGES)),
      ...g.readWrite.map((t) => staging("table", "staging", t, RUN_TABLE_PRIVILEGES)),
      ...g.sequences.map((s) => staging("sequence", "staging-sequence", s, ["USAGE"])),
    );
  }
  // Default privileges are per creating role: a table another role creates is covered by neither the grant on every
  // table (those that exist) nor the admin's defaults, so each role that loads the publish schema has its own.
  const defaults: TaskDefaultPrivilege[] = [
    { key: "publish-tables", privileges: ["SELECT"] },
    ...(args.publishTableOwners ?? []).map((owner) => ({
      key: `publish-tables/${owner}`,
      owner,
      privileges: ["SELECT"],
    })),
  ];
  return { grants, defaults, baseline, runTables };
}
