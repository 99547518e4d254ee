/**
 * The warehouse side (procedure step 5.1): the publish and staging schemas, the common-schema baseline, and the export
 * task's own login role with least-privilege grants. Schemas, role and grants are @pulumi/postgresql resources
 * through an explicit provider (the admin login); the baseline is providers/baseline.ts.
 */
import * as postgresql from "@pulumi/postgresql";
import * as pulumi from "@pulumi/pulumi";
import { baselineSequences, baselineTables } from "../../providers/baseline";
import type { PgConnectionInput } from "./connection";
import { SqlBaseline } from "./sqlBaseline";

export interface WarehouseArgs {
  /** The admin login; its password is a Pulumi secret. */
  connection: PgConnectionInput;
  /** Schema names only (publish_schema and staging_schema_only). */
  publishSchema: string;
  stagingSchema: string;
  /** The export task's login role. */
  task: { username: string; password: pulumi.Output<string> };
  baseline: { name: string; buildNumber: string; templateSha256: string; sql: string };
  /** Staging tables the task only reads (HUB_API_CONFIG, HUB_PLAT_CONFIG); every other baseline table is a run table. */
  configTables: string[];
}

/** The task's privileges on the staging schema's tables, derived from the baseline. */
export interface StagingGrants {
  readOnly: string[];
  readWrite: string[];
  /** Sequences of the run tables' serial columns: USAGE, so that the task can insert. */
  sequences: string[];
}

/** Splits the baseline's staging tables into read-only config tables and the run tables the task writes. */
export function stagingGrants(sql: string, stagingSchema: string, configTables: readonly string[]): StagingGrants {
  const schema = stagingSchema.toLowerCase();
  const config = new Set(configTables.map((t) => t.toLowerCase()));
  const tables = baselineTables(sql)
    .filter((qualified) => qualified.startsWith(`${schema}.`))
    .map((qualified) => qualified.slice(schema.length + 1));
  const sequences = baselineSequences(sql)
    .filter((qualified) => qualified.startsWith(`${schema}.`))
    .map((qualified) => qualified.slice(schema.length + 1))
    .sort();
  return { readOnly: tables.filter((t) => config.has(t)).sort(), readWrite: tables.filter((t) => !config.has(t)).sort(), sequences };
}

export const RUN_TABLE_PRIVILEGES = ["DELETE", "INSERT", "SELECT", "UPDATE"];

export class Warehouse extends pulumi.ComponentResource {
  readonly baseline: SqlBaseline;
  readonly taskRoleName: pulumi.Output<string>;
  readonly grants: StagingGrants;

  constructor(name: string, args: WarehouseArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:warehouse:Warehouse", name, {}, opts);
    const c = args.connection;
    const provider = new postgresql.Provider(
      name,
      { host: c.host, port: c.port, database: c.database, username: c.user, password: c.password, sslmode: c.sslMode, superuser: false, connectTimeout: 15 },
      { parent: this },
    );
    const pg = { parent: this, provider };

    // Both schemas outlive the stack: publish holds the HR system's data, staging the run history.
    const schema = (key: string, schemaName: string) =>
      new postgresql.Schema(`${name}/${key}`, { name: schemaName, database: c.database, ifNotExists: true, dropCascade: false }, { ...pg, retainOnDelete: true });
    const publish = schema("publish", args.publishSchema);
    const staging = schema("staging", args.stagingSchema);

    this.baseline = new SqlBaseline(`${name}/common-schema-baseline`, { connection: c, ...args.baseline }, { parent: this, dependsOn: [staging], retainOnDelete: true });

    const role = new postgresql.Role(
      `${name}/task-role`,
      { name: args.task.username, login: true, password: args.task.password, superuser: false, createDatabase: false, createRole: false, inherit: true, replication: false },
      pg,
    );
    this.taskRoleName = role.name;

    this.grants = stagingGrants(args.baseline.sql, args.stagingSchema, args.configTables);
    const grant = (key: string, grantArgs: Omit<postgresql.GrantArgs, "database" | "role">, dependsOn: pulumi.Resource[]) =>
      new postgresql.Grant(`${name}/grant/${key}`, { database: c.database, role: role.name, ...grantArgs }, { ...pg, dependsOn });

    grant("connect", { objectType: "database", privileges: ["CONNECT"] }, []);
    grant("publish-usage", { objectType: "schema", schema: publish.name, privileges: ["USAGE"] }, []);
    // Every table of the publish schema: the extract reads the HR system's employees there.
    grant("publish-tables", { objectType: "table", schema: publish.name, objects: [], privileges: ["SELECT"] }, []);
    new postgresql.DefaultPrivileges(
      `${name}/default/publish-tables`,
      { database: c.database, role: role.name, owner: c.user, schema: publish.name, objectType: "table", privileges: ["SELECT"] },
      pg,
    );
    // USAGE and no CREATE: the task never changes the schema; the baseline does.
    grant("staging-usage", { objectType: "schema", schema: staging.name, privileges: ["USAGE"] }, [this.baseline]);
    grant("staging-config-tables", { objectType: "table", schema: staging.name, objects: this.grants.readOnly, privileges: ["SELECT"] }, [this.baseline]);
    grant("staging-run-tables", { objectType: "table", schema: staging.name, objects: this.grants.readWrite, privileges: RUN_TABLE_PRIVILEGES }, [this.baseline]);
    if (this.grants.sequences.length) grant("staging-run-sequences", { objectType: "sequence", schema: staging.name, objects: this.grants.sequences, privileges: ["USAGE"] }, [this.baseline]);

    this.registerOutputs({ taskRoleName: this.taskRoleName, baselineSha256: this.baseline.sha256, grants: this.grants });
  }
}
