/**
 * The warehouse side (procedure step 5.1): the publish and staging schemas, the common-schema baseline, and the export
 * task's own login role with least-privilege grants. Schemas, role and grants are @pulumi/postgresql resources
 * through an explicit provider (the admin login); the baseline is providers/baseline.ts.
 *
 * Grants never revoke what a newer grant gave. The upstream provider replaces a Grant or DefaultPrivileges on any
 * change, and deleting one runs REVOKE: replaced create-first (the engine's default), the old one's REVOKE would
 * take back what the new one had just granted. So every grant is replaced delete-first, and the staging grants are
 * one resource per table: a new baseline table adds a grant and replaces none, a table that leaves the baseline
 * (a client rename) loses only its own. A task-role rename makes a new role first, then replaces every grant
 * (REVOKE from the old role, GRANT to the new one), then drops the old role.
 */
import * as postgresql from "@pulumi/postgresql";
import * as pulumi from "@pulumi/pulumi";
import { baselineSequences, baselineTables } from "../../providers/baseline";
import type { WarehouseLogin } from "./connection";
import { SqlBaseline } from "./sqlBaseline";

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
      new postgresql.Schema(`${name}/${key}`, { name: schemaName, database: c.database, ifNotExists: true, dropCascade: false }, { ...pg, retainOnDelete: true });
    const publish = schema("publish", args.publishSchema);
    const staging = schema("staging", args.stagingSchema);

    this.baseline = new SqlBaseline(
      `${name}/common-schema-baseline`,
      { target: c.label, ...args.baseline },
      { parent: this, dependsOn: [staging], retainOnDelete: true, ...(args.protect ? { protect: true } : {}) },
    );

    // A new name makes a new role (created first), not a rename in place: the grants of the old name are then
    // revoked (delete-first) while that role still exists, before it is dropped.
    const role = new postgresql.Role(
      `${name}/task-role`,
      { name: args.task.username, login: true, password: args.task.password, superuser: false, createDatabase: false, createRole: false, inherit: true, replication: false },
      { ...pg, replaceOnChanges: ["name"] },
    );
    this.taskRoleName = role.name;

    this.grants = stagingGrants(args.baseline.sql, args.stagingSchema, args.configTables);
    // Delete-first: see the file comment.
    const grantOptions = (dependsOn: pulumi.Resource[]) => ({ ...pg, dependsOn, deleteBeforeReplace: true });
    const grant = (key: string, grantArgs: Omit<postgresql.GrantArgs, "database" | "role">, dependsOn: pulumi.Resource[]) =>
      new postgresql.Grant(`${name}/grant/${key}`, { database: c.database, role: role.name, ...grantArgs }, grantOptions(dependsOn));

    grant("connect", { objectType: "database", privileges: ["CONNECT"] }, []);
    grant("publish-usage", { objectType: "schema", schema: publish.name, privileges: ["USAGE"] }, []);
    // Every table of the publish schema: the extract reads the HR system's employees there.
    grant("publish-tables", { objectType: "table", schema: publish.name, objects: [], privileges: ["SELECT"] }, []);
    new postgresql.DefaultPrivileges(
      `${name}/default/publish-tables`,
      { database: c.database, role: role.name, owner: c.user, schema: publish.name, objectType: "table", privileges: ["SELECT"] },
      grantOptions([]),
    );
    // USAGE and no CREATE: the task never changes the schema; the baseline does.
    grant("staging-usage", { objectType: "schema", schema: staging.name, privileges: ["USAGE"] }, [this.baseline]);
    for (const table of this.grants.readOnly) grant(`staging/${table}`, { objectType: "table", schema: staging.name, objects: [table], privileges: ["SELECT"] }, [this.baseline]);
    for (const table of this.grants.readWrite) grant(`staging/${table}`, { objectType: "table", schema: staging.name, objects: [table], privileges: RUN_TABLE_PRIVILEGES }, [this.baseline]);
    for (const sequence of this.grants.sequences) grant(`staging-sequence/${sequence}`, { objectType: "sequence", schema: staging.name, objects: [sequence], privileges: ["USAGE"] }, [this.baseline]);

    this.registerOutputs({ taskRoleName: this.taskRoleName, baselineSha256: this.baseline.sha256, grants: this.grants });
  }
}
