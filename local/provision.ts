/**
 * Provisions the embedded default from the installation plan, with the same plan and provider operations that
 * `pulumi up` uses: bucket folder, connection records, warehouse (database, schemas, task role, common baseline, the
 * client's run tables, grants), config-table rows and routing rules.
 */
import type { InstallationPlan } from "../core/plan";
import { applyBaseline } from "../providers/baseline";
import { upsertRow } from "../providers/sqlRows";
import { postRoutingRules } from "../providers/routingRules";
import { withPgClient, quoteIdent } from "../providers/pg";
import { stagingGrants, APPEND_ONLY_PRIVILEGES, RUN_TABLE_PRIVILEGES } from "../components/warehouse/warehouse";
import { intakeJobWrittenWhenPresent } from "../core/intakeJob";
import path from "node:path";
import { BUCKET_FOLDERS } from "../core/naming";
import { applyScriptFiles, SHARED_FILES } from "../providers/scriptFiles";
import { writeBucketObjects, writeConnectionRecords } from "./stores";
import { applyScriptsRelease, keptScriptFiles, type ScriptsRelease } from "../providers/scriptsRelease";
import type { LocalPaths } from "./paths";
import { deploymentOf, previousDeployment, removeGone, writeDeployment, type Removed } from "./deployment";

export interface ProvisionResult {
  databaseUrl: string;
  bucketFiles: string[];
  connectionFiles: string[];
  rows: number;
  routingRules: { tenantId: string; rules: number }[];
  /** What the previous start provisioned and the stack config no longer has, deleted. */
  removed: Removed;
}

/** The admin URL of the stack's database on the embedded server. */
export function adminDatabaseUrl(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = "/" + encodeURIComponent(database);
  return url.toString();
}

export async function provisionLocal(
  plan: InstallationPlan,
  paths: LocalPaths,
  adminUrl: string,
  release?: ScriptsRelease,
): Promise<ProvisionResult> {
  const config = plan.config;
  const database = config.database.database;
  const dbUrl = adminDatabaseUrl(adminUrl, database);

  // Steps 1 and 7: the bucket folder with the rendered template and the scripts folder; step 2: the connections.
  const bucketFiles = writeBucketObjects(paths.bucket, plan.bucketObjects);
  const scripts = path.join(paths.bucket, BUCKET_FOLDERS.scripts);
  // Step 7.1: a vendor scripts release replaces the folder's content (the platform's files stay), as `pulumi up` does.
  if (release) await applyScriptsRelease({ kind: "folder", dir: scripts }, release, keptScriptFiles(release));
  // Steps 7.2 to 7.4: this stack's part of the shared credential files, merged as `pulumi up` merges them in S3.
  await applyScriptFiles({
    location: { kind: "folder", dir: scripts },
    warehouseConnection: plan.scriptFiles.warehouseConnection,
    entries: JSON.parse(plan.scriptFiles.tenantCredentials.reveal()),
  });
  bucketFiles.push(path.join(scripts, SHARED_FILES.credentialsIni), path.join(scripts, SHARED_FILES.tenantCredentials));
  const connectionFiles = writeConnectionRecords(paths.connections, plan.connections);

  // Step 5.1: the database, its schemas and the task's login role, then the common-schema baseline and the client's
  // run tables.
  await withPgClient(adminUrl, async (client) => {
    const { rowCount } = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [database]);
    if (!rowCount) await client.query(`CREATE DATABASE ${quoteDatabase(database)}`);
  });
  const role = quoteIdent(config.database.task.username, "role");
  await withPgClient(dbUrl, async (client) => {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(plan.publishSchema, "schema")}`);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(plan.stagingSchema, "schema")}`);
    const password = config.database.task.password.reveal("hubExport:database.task.password");
    const { rowCount } = await client.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [
      config.database.task.username,
    ]);
    // Passwords cannot be bound parameters in DDL; format() quotes the literal inside the server.
    const { rows } = await client.query("SELECT format('%L', $1::text) AS literal", [password]);
    await client.query(
      `${rowCount ? "ALTER" : "CREATE"} ROLE ${role} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD ${rows[0].literal}`,
    );
    // The platform's part, which the embedded default stands in for (like the database): the roles that load the
    // publish schema, allowed to create tables in it.
    for (const owner of config.database.publishTableOwners) {
      const loader = quoteIdent(owner, "role");
      const { rowCount: exists } = await client.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [
        owner.toLowerCase(),
      ]);
      if (!exists) await client.query(`CREATE ROLE ${loader} NOLOGIN`);
      await client.query(`GRANT USAGE, CREATE ON SCHEMA ${quoteIdent(plan.publishSchema, "schema")} TO ${loader}`);
    }
  });
  await applyBaseline(dbUrl, plan.baseline, intakeJobWrittenWhenPresent(plan.stagingSchema));
  await applyBaseline(dbUrl, plan.runTables);
  await grantTaskRole(dbUrl, plan, role);

  // Steps 5.2 and 5.3: the config-table rows.
  const rows = [...plan.rows.apiConfig, ...plan.rows.platConfig];
  for (const row of rows)
    await upsertRow(dbUrl, { schema: plan.stagingSchema, table: row.table, key: row.key, values: row.values });

  // The hub side: each tenant's routing rules.
  const routingRules: ProvisionResult["routingRules"] = [];
  for (const r of plan.routingRules) {
    await postRoutingRules({
      cfgApiUrl: r.cfgApiUrl,
      tenantId: r.tenant.hubTenantId,
      credentialsString: r.credentialsString.reveal(),
      rules: r.rules,
    });
    routingRules.push({ tenantId: r.tenant.hubTenantId, rules: r.rules.length });
  }

  // As `pulumi up` does after creating and updating: delete what the stack config no longer has.
  const current = deploymentOf(plan);
  const removed = await removeGone(await previousDeployment(paths, plan, dbUrl), current, paths, dbUrl);
  writeDeployment(paths, current);
  return { databaseUrl: dbUrl, bucketFiles, connectionFiles, rows: rows.length, routingRules, removed };
}

/** The grants of components/warehouse: read the publish schema and the config tables, write the run tables. */
export async function grantTaskRole(dbUrl: string, plan: InstallationPlan, role: string): Promise<void> {
  const publish = quoteIdent(plan.publishSchema, "schema");
  const staging = quoteIdent(plan.stagingSchema, "schema");
  // The tables of both files: the common schema's and this client's run tables.
  const grants = stagingGrants(`${plan.baseline.sql}\n${plan.runTables.sql}`, plan.stagingSchema);
  await withPgClient(dbUrl, async (client) => {
    await client.query(`GRANT CONNECT ON DATABASE ${quoteDatabase(plan.config.database.database)} TO ${role}`);
    await client.query(`GRANT USAGE ON SCHEMA ${publish} TO ${role}`);
    await client.query(`GRANT SELECT ON ALL TABLES IN SCHEMA ${publish} TO ${role}`);
    await client.query(`ALTER DEFAULT PRIVILEGES IN SCHEMA ${publish} GRANT SELECT ON TABLES TO ${role}`);
    // The tables each loader creates later, as components/warehouse/warehouse.ts sets it up.
    for (const owner of plan.config.database.publishTableOwners) {
      await client.query(
        `ALTER DEFAULT PRIVILEGES FOR ROLE ${quoteIdent(owner, "role")} IN SCHEMA ${publish} GRANT SELECT ON TABLES TO ${role}`,
      );
    }
    await client.query(`GRANT USAGE ON SCHEMA ${staging} TO ${role}`);
    for (const t of grants.readOnly)
      await client.query(`GRANT SELECT ON ${staging}.${quoteIdent(t, "table")} TO ${role}`);
    for (const t of grants.appendOnly)
      await client.query(
        `GRANT ${APPEND_ONLY_PRIVILEGES.join(", ")} ON ${staging}.${quoteIdent(t, "table")} TO ${role}`,
      );
    for (const t of grants.readWrite)
      await client.query(`GRANT ${RUN_TABLE_PRIVILEGES.join(", ")} ON ${staging}.${quoteIdent(t, "table")} TO ${role}`);
    for (const s of grants.sequences)
      await client.query(`GRANT USAGE ON SEQUENCE ${staging}.${quoteIdent(s, "sequence")} TO ${role}`);
  });
}

/** Database names keep their case: the connection record names the database exactly as the config does. */
function quoteDatabase(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_$-]{0,62}$/.test(name))
    throw new Error(`database name ${JSON.stringify(name)} is not safe`);
  return `"${name}"`;
}
