/**
 * The warehouse side (procedure step 5.1): schemas, the common-schema baseline and this client's run tables
 * (providers/baseline.ts, retained on delete), and the task's login role with least-privilege grants, replaced
 * delete-first, one per table, so that no REVOKE takes back a newer GRANT (docs/pulumi-reference.md, "What `pulumi
 * up` does").
 */
import * as postgresql from "@pulumi/postgresql";
import * as pulumi from "@pulumi/pulumi";
import { baselineSequences, baselineTables } from "../../providers/baseline";
import { SHARED_TABLE_ACCESS } from "../../core/naming";
import type { SqlTables } from "../../core/sqlTables";
import type { WarehouseLogin } from "./connection";
import { ClientRunTables, SqlBaseline } from "./sqlBaseline";

export interface WarehouseArgs {
  /** The admin login for the PostgreSQL provider; its password is a Pulumi secret. */
  login: WarehouseLogin;
  /** Protect the baseline against `pulumi destroy` and deletion (prod). */
  protect?: boolean;
  /** Schema names only (publish_schema and staging_schema_only). */
  publishSchema: string;
  stagingSchema: string;
  /** The export task's login role. */
  task: { username: string; password: pulumi.Output<string> };
  /** Roles besides the admin that create tables in the publish schema (hubExport:database.publishTableOwners). */
  publishTableOwners?: string[];
  /** The common schema, rendered: the same for every client of the environment. */
  baseline: SqlFile;
  /** This client's run tables, rendered with its name. */
  runTables: SqlFile;
}

export interface SqlFile {
  name: string;
  buildNumber: string;
  templateSha256: string;
  sql: string;
  /** Its tables' columns (core/sqlTables.ts). */
  tables: SqlTables;
  /** Columns the project writes when an adopted table has them (providers/baseline.ts). */
  writtenWhenPresent?: Record<string, string[]>;
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
 * Splits the SQL's staging tables into the shared ones the task only reads (HUB_API_CONFIG, HUB_PLAT_CONFIG) or only
 * adds rows to (HUB_INTAKE_JOB: INSERT and SELECT, never UPDATE or DELETE), as SHARED_TABLE_ACCESS says, and the run
 * tables the task writes.
 */
export function stagingGrants(sql: string, stagingSchema: string): StagingGrants {
  const schema = stagingSchema.toLowerCase();
  const config = new Set(SHARED_TABLE_ACCESS.readOnly.map((t) => t.toLowerCase()));
  const appendOnly = new Set(SHARED_TABLE_ACCESS.appendOnly.map((t) => t.toLowerCase()));
  const tables = baselineTables(sql)
    .filter((qualified) => qualified.startsWith(`${schema}.`))
    .map((qualified) => qualified.slice(schema.length + 1));
  const sequences = baselineSequences(sql)
    .filter((qualified) => qualified.startsWith(`${schema}.`))
    .map((qualified) => qualified.slice(schema.length + 1))
    .sort();
  return {
    readOnly: tables.filter((t) => config.has(t)).sort(),
    appendOnly: tables.filter((t) => appendOnly.has(t)).sort(),
    readWrite: tables.filter((t) => !config.has(t) && !appendOnly.has(t)).sort(),
    sequences,
  };
}

export const RUN_TABLE_PRIVILEGES = ["DELETE", "INSERT", "SELECT", "UPDATE"];
/** On a shared table the task only adds rows to: never changing or deleting another pipeline's rows. */
export const APPEND_ONLY_PRIVILEGES = ["INSERT", "SELECT"];

export class Warehouse extends pulumi.ComponentResource {
  readonly baseline: SqlBaseline;
  readonly runTables: ClientRunTables;
  readonly taskRoleName: pulumi.Output<string>;
  /** On the common schema's tables. */
  readonly grants: StagingGrants;
  /** On this client's run tables. */
  readonly runTableGrants: StagingGrants;

  constructor(name: string, args: WarehouseArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:warehouse:Warehouse", name, {}, opts);
    const c = args.login;
    const provider = new postgresql.Provider(
      name,
      {
        host: c.host,
        port: c.port,
        database: c.database,
        username: c.user,
        password: c.password,
        sslmode: c.sslMode,
        ...(c.sslRootCert ? { sslrootcert: c.sslRootCert } : {}),
        superuser: false,
        connectTimeout: 15,
      },
      { parent: this },
    );
    const pg = { parent: this, provider };

    // Both schemas outlive the stack: publish holds the HR system's data, staging the run history.
    const schema = (key: string, schemaName: string) =>
      new postgresql.Schema(
        `${name}/${key}`,
        { name: schemaName, database: c.database, ifNotExists: true, dropCascade: false },
        { ...pg, retainOnDelete: true },
      );
    const publish = schema("publish", args.publishSchema);
    const staging = schema("staging", args.stagingSchema);

    const retained = { parent: this, retainOnDelete: true, ...(args.protect ? { protect: true } : {}) };
    this.baseline = new SqlBaseline(
      `${name}/common-schema-baseline`,
      { target: c.label, ...args.baseline },
      { ...retained, dependsOn: [staging] },
    );
    this.runTables = new ClientRunTables(
      `${name}/client-run-tables`,
      { target: c.label, ...args.runTables },
      { ...retained, dependsOn: [this.baseline] },
    );

    // A new name makes a new role (created first), not a rename in place: the grants of the old name are then
    // revoked (delete-first) while that role still exists, before it is dropped.
    const role = new postgresql.Role(
      `${name}/task-role`,
      {
        name: args.task.username,
        login: true,
        password: args.task.password,
        superuser: false,
        createDatabase: false,
        createRole: false,
        inherit: true,
        replication: false,
      },
      { ...pg, replaceOnChanges: ["name"] },
    );
    this.taskRoleName = role.name;

    this.grants = stagingGrants(args.baseline.sql, args.stagingSchema);
    this.runTableGrants = stagingGrants(args.runTables.sql, args.stagingSchema);
    // Delete-first: see the file comment.
    const grantOptions = (dependsOn: pulumi.Resource[]) => ({ ...pg, dependsOn, deleteBeforeReplace: true });
    const grant = (
      key: string,
      grantArgs: Omit<postgresql.GrantArgs, "database" | "role">,
      dependsOn: pulumi.Resource[],
    ) =>
      new postgresql.Grant(
        `${name}/grant/${key}`,
        { database: c.database, role: role.name, ...grantArgs },
        grantOptions(dependsOn),
      );

    grant("connect", { objectType: "database", privileges: ["CONNECT"] }, []);
    grant("publish-usage", { objectType: "schema", schema: publish.name, privileges: ["USAGE"] }, []);
    // Every table of the publish schema: the extract reads the HR system's employees there.
    grant("publish-tables", { objectType: "table", schema: publish.name, objects: [], privileges: ["SELECT"] }, []);
    // Tables created later: by the admin, and by each role that loads the publish schema (the HR system's loader).
    // Default privileges are per creating role ("you can change default privileges only for objects that will be
    // created by yourself or by roles that you are a member of", PostgreSQL ALTER DEFAULT PRIVILEGES): a table another
    // role creates is covered by neither the grant above nor the admin's defaults.
    new postgresql.DefaultPrivileges(
      `${name}/default/publish-tables`,
      {
        database: c.database,
        role: role.name,
        owner: c.user,
        schema: publish.name,
        objectType: "table",
        privileges: ["SELECT"],
      },
      grantOptions([]),
    );
    for (const owner of args.publishTableOwners ?? []) {
      new postgresql.DefaultPrivileges(
        `${name}/default/publish-tables/${owner}`,
        {
          database: c.database,
          role: role.name,
          owner,
          schema: publish.name,
          objectType: "table",
          privileges: ["SELECT"],
        },
        grantOptions([]),
      );
    }
    // USAGE and no CREATE: the task never changes the schema; the baseline does.
    grant("staging-usage", { objectType: "schema", schema: staging.name, privileges: ["USAGE"] }, [this.baseline]);
    // Each grant waits for the resource that creates its table.
    for (const [grants, creator] of [
      [this.grants, this.baseline],
      [this.runTableGrants, this.runTables],
    ] as const) {
      for (const table of grants.readOnly)
        grant(
          `staging/${table}`,
          { objectType: "table", schema: staging.name, objects: [table], privileges: ["SELECT"] },
          [creator],
        );
      for (const table of grants.appendOnly)
        grant(
          `staging/${table}`,
          { objectType: "table", schema: staging.name, objects: [table], privileges: APPEND_ONLY_PRIVILEGES },
          [creator],
        );
      for (const table of grants.readWrite)
        grant(
          `staging/${table}`,
          { objectType: "table", schema: staging.name, objects: [table], privileges: RUN_TABLE_PRIVILEGES },
          [creator],
        );
      for (const sequence of grants.sequences)
        grant(
          `staging-sequence/${sequence}`,
          { objectType: "sequence", schema: staging.name, objects: [sequence], privileges: ["USAGE"] },
          [creator],
        );
    }

    this.registerOutputs({
      taskRoleName: this.taskRoleName,
      baselineSha256: this.baseline.sha256,
      runTablesSha256: this.runTables.sha256,
      grants: this.grants,
      runTableGrants: this.runTableGrants,
    });
  }
}
