/**
 * Applies the installation without the Pulumi engine, with the same installation and provider operations that
 * `pulumi up` uses, then deletes what the previous apply had and the stack config no longer has. Local mode runs on
 * it; so do the test platform and the benchmarks.
 */
import path from "node:path";
import type { Installation } from "../core/installation";
import { BUCKET_FOLDERS } from "../core/naming";
import { taskPrivileges, type TaskGrant } from "../core/privileges";
import { intakeJobWrittenWhenPresent } from "../core/intakeJob";
import { applyBaseline, baselineObjects } from "../providers/baseline";
import { upsertRow } from "../providers/sqlRows";
import { postRoutingRules } from "../providers/routingRules";
import { withPgClient, quoteIdent } from "../providers/pg";
import { applyScriptFiles } from "../providers/scriptFiles";
import { applyScriptsRelease, keptScriptFiles } from "../providers/scriptsRelease";
import type { ScriptsRelease } from "../core/scriptsRelease";
import { writeBucketObjects, writeConnectionRecords } from "./stores";
import type { LocalPaths } from "./paths";
import { deploymentOf, previousDeployment, removeGone, writeDeployment, type Removed } from "./deployment";

export interface ApplyResult {
  databaseUrl: string;
  /** What the previous apply provisioned and the stack config no longer has, deleted. */
  removed: Removed;
}

export interface ApplyOptions {
  /** A vendor scripts release (hubExport:scriptsRelease), loaded. */
  release?: ScriptsRelease;
  /** Post each tenant's routing rules to the hub's CFG API (default); off where the test's hub is not one. */
  routingRules?: boolean;
}

/**
 * The admin login's URL of the stack's database (hubExport:database.admin at its provisioning endpoint), as `pulumi
 * up` logs in: every step below runs as it, never as a superuser (the platform's part is local/warehouseDba.ts).
 */
export function adminDatabaseUrl(database: Installation["config"]["database"]): string {
  const url = new URL("postgres://localhost");
  url.hostname = database.provisioning?.host ?? database.host;
  url.port = String(database.provisioning?.port ?? database.port);
  url.username = encodeURIComponent(database.admin.username);
  url.password = encodeURIComponent(database.admin.password.reveal("hubExport:database.admin.password"));
  url.pathname = "/" + encodeURIComponent(database.database);
  return url.toString();
}

export async function applyInstallation(
  installation: Installation,
  paths: LocalPaths,
  options: ApplyOptions,
): Promise<ApplyResult> {
  const config = installation.config;
  const dbUrl = adminDatabaseUrl(config.database);

  // Steps 1 and 7: the bucket folder with the rendered template and the scripts folder; step 2: the connections.
  writeBucketObjects(paths.bucket, installation.bucketObjects);
  const scripts = path.join(paths.bucket, BUCKET_FOLDERS.scripts);
  // Step 7.1: a vendor scripts release replaces the folder's content (the platform's files stay), as `pulumi up` does.
  if (options.release)
    await applyScriptsRelease({ kind: "folder", dir: scripts }, options.release, keptScriptFiles(options.release));
  // Steps 7.2 to 7.4: this stack's part of the shared credential files, merged as `pulumi up` merges them in S3.
  await applyScriptFiles({
    location: { kind: "folder", dir: scripts },
    warehouseConnection: installation.scriptFiles.warehouseConnection,
    entries: JSON.parse(installation.scriptFiles.tenantCredentials.reveal()) as Record<string, string>,
  });
  writeConnectionRecords(paths.connections, installation.connections);

  // Step 5.1: the task's login role, the common-schema baseline (with the staging schema), the client's run tables and
  // the task's grants. The database and the publish schema are the platform's.
  await applyWarehouse(installation, dbUrl);

  // Steps 5.2 and 5.3: the config-table rows.
  for (const row of [...installation.rows.apiConfig, ...installation.rows.platConfig])
    await upsertRow(dbUrl, { schema: installation.stagingSchema, table: row.table, key: row.key, values: row.values });

  // The hub side: each tenant's routing rules.
  for (const r of options.routingRules === false ? [] : installation.routingRules) {
    await postRoutingRules({
      cfgApiUrl: r.cfgApiUrl,
      tenantId: r.tenant.hubTenantId,
      credentialsString: r.credentialsString.reveal(),
      rules: r.rules,
    });
  }

  // As `pulumi up` does after creating and updating: delete what the stack config no longer has.
  const current = deploymentOf(installation);
  const removed = await removeGone(await previousDeployment(paths, installation, dbUrl), current, paths, dbUrl);
  writeDeployment(paths, current);
  return { databaseUrl: dbUrl, removed };
}

/** components/warehouse/warehouse.ts as SQL, as the admin login. */
async function applyWarehouse(installation: Installation, dbUrl: string): Promise<void> {
  const { database } = installation.config;
  const publish = quoteIdent(installation.publishSchema, "schema");
  const staging = quoteIdent(installation.stagingSchema, "schema");
  // A task that logs in as the admin (the test platform, the benchmarks) owns what it uses: no role, no grants.
  const ownRole = database.task.username !== database.admin.username;
  const role = quoteIdent(database.task.username, "role");
  if (ownRole) {
    await withPgClient(dbUrl, async (client) => {
      const password = database.task.password.reveal("hubExport:database.task.password");
      const { rowCount } = await client.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [database.task.username]);
      // Passwords cannot be bound parameters in DDL; format() quotes the literal inside the server.
      const { rows } = await client.query<{ literal: string }>("SELECT format('%L', $1::text) AS literal", [password]);
      // An ALTER names only what it changes: PostgreSQL 16+ refuses NOCREATEDB from an admin without CREATEDB.
      await client.query(
        rowCount
          ? `ALTER ROLE ${role} WITH LOGIN PASSWORD ${rows[0].literal}`
          : `CREATE ROLE ${role} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD ${rows[0].literal}`,
      );
    });
  }
  await applyBaseline(dbUrl, installation.baseline, intakeJobWrittenWhenPresent(installation.stagingSchema));
  await applyBaseline(dbUrl, installation.runTables);
  if (!ownRole) return;

  const privileges = taskPrivileges({
    stagingSchema: installation.stagingSchema,
    publishTableOwners: database.publishTableOwners,
    baseline: baselineObjects(installation.baseline.sql),
    runTables: baselineObjects(installation.runTables.sql),
  });
  const schemas = { publish, staging };
  const on = (g: TaskGrant): string => {
    if (g.objectType === "database") return `DATABASE ${quoteDatabase(database.database)}`;
    const schema = schemas[g.schema!];
    if (g.objectType === "schema") return `SCHEMA ${schema}`;
    if (!g.objects?.length) return `ALL ${g.objectType.toUpperCase()}S IN SCHEMA ${schema}`;
    const kind = g.objectType === "sequence" ? "SEQUENCE " : "";
    return kind + g.objects.map((o) => `${schema}.${quoteIdent(o, g.objectType)}`).join(", ");
  };
  await withPgClient(dbUrl, async (client) => {
    for (const g of privileges.grants) await client.query(`GRANT ${g.privileges.join(", ")} ON ${on(g)} TO ${role}`);
    for (const d of privileges.defaults) {
      const owner = d.owner ? `FOR ROLE ${quoteIdent(d.owner, "role")} ` : "";
      await client.query(
        `ALTER DEFAULT PRIVILEGES ${owner}IN SCHEMA ${publish} GRANT ${d.privileges.join(", ")} ON TABLES TO ${role}`,
      );
    }
  });
}

/** Database names keep their case: the connection record names the database exactly as the config does. */
function quoteDatabase(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_$-]{0,62}$/.test(name))
    throw new Error(`database name ${JSON.stringify(name)} is not safe`);
  return `"${name}"`;
}
