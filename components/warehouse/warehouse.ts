/**
 * The warehouse side (procedure step 5.1): the common-schema baseline with the staging schema and this client's run
 * tables (providers/baseline.ts, retained on delete), and the task's login role with least-privilege grants, replaced
 * delete-first, one per table, so that no REVOKE takes back a newer GRANT (docs/pulumi-reference.md, "What `pulumi
 * up` does").
 */
import * as postgresql from "@pulumi/postgresql";
import * as pulumi from "@pulumi/pulumi";
import { baselineObjects } from "../../providers/baseline";
import { taskPrivileges, type StagingGrants } from "../../core/privileges";
import type { WarehouseLogin } from "./connection";
import { ClientRunTables, SqlBaseline, type SqlFile } from "./sqlBaseline";

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

    // No postgresql.Schema: its create first runs `GRANT <database owner> TO <admin>` (helpers.go withRolesGranted),
    // a membership no DBA should have to give. The publish schema is the platform's (probe --warehouse checks it
    // exists); the baseline creates the staging schema (CREATE SCHEMA IF NOT EXISTS needs only CREATE on the database).
    // Both were retainOnDelete: a stack that had them forgets them at its next `up`, without SQL.
    const retained = { parent: this, retainOnDelete: true, ...(args.protect ? { protect: true } : {}) };
    this.baseline = new SqlBaseline(`${name}/common-schema-baseline`, { target: c.label, ...args.baseline }, retained);
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

    const privileges = taskPrivileges({
      stagingSchema: args.stagingSchema,
      publishTableOwners: args.publishTableOwners,
      baseline: baselineObjects(args.baseline.sql),
      runTables: baselineObjects(args.runTables.sql),
    });
    this.grants = privileges.baseline;
    this.runTableGrants = privileges.runTables;
    // Delete-first (see the file comment); each grant waits for the resource that creates its objects.
    const grantOptions = (dependsOn: pulumi.Resource[]) => ({ ...pg, dependsOn, deleteBeforeReplace: true });
    const schemas = { publish: args.publishSchema, staging: args.stagingSchema };
    const creators = { baseline: this.baseline, runTables: this.runTables };
    for (const g of privileges.grants) {
      new postgresql.Grant(
        `${name}/grant/${g.key}`,
        {
          database: c.database,
          role: role.name,
          objectType: g.objectType,
          ...(g.schema ? { schema: schemas[g.schema] } : {}),
          ...(g.objects ? { objects: g.objects } : {}),
          privileges: g.privileges,
        },
        grantOptions(g.createdBy ? [creators[g.createdBy]] : []),
      );
    }
    // Tables created later, by the admin and by each role that loads the publish schema (the HR system's loader).
    for (const d of privileges.defaults) {
      new postgresql.DefaultPrivileges(
        `${name}/default/${d.key}`,
        {
          database: c.database,
          role: role.name,
          owner: d.owner ?? c.user,
          schema: args.publishSchema,
          objectType: "table",
          privileges: d.privileges,
        },
        grantOptions([]),
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
