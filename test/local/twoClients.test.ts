/**
 * Two clients in one local platform environment: one database (common schema shared), one bucket folder (template and
 * scripts folder shared), one connection collection. Both are provisioned with the providers' operations and both run;
 * then one is removed the way `pulumi destroy` removes a stack. The other's rows, files, template, run tables and
 * credential entries are intact, and it still runs.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Pool } from "pg";
import { createTestDatabase } from "../support/database";
import { emulatorConfig, stackConfigFor, QUEUES, TENANTS } from "../support/platform";
import { runTask, taskBundle } from "../support/taskProcess";
import { startEmulator, type Emulator } from "../../emulator";
import { validateStackConfig } from "../../config/validate";
import { planInstallation, type InstallationPlan } from "../../core/plan";
import { loadPipelineTemplate, loadSqlSources, TEMPLATES_DIR } from "../../templates";
import { BUCKET_FOLDERS, connectionFileName } from "../../core/naming";
import {
  applyBaseline,
  baselineProvider,
  BASELINE_PROVIDER_VERSION,
  missingBaselineTables,
  sha256Hex,
  type BaselineState,
} from "../../providers/baseline";
import { deleteRow, upsertRow } from "../../providers/sqlRows";
import { postRoutingRules } from "../../providers/routingRules";
import { applyScriptFiles, releaseScriptFiles } from "../../providers/scriptFiles";
import { writeBucketObjects, writeConnectionRecords } from "../../local/stores";
import { seedSampleEmployees } from "../../task/model/sampleData";
import { completedRuns } from "../../operate/status";

const GLOBEX_TENANT = {
  hubTenantId: "9c8b7a6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
  clientId: "globex-eu-test",
  clientSecret: "globex-eu-S3cr3t!z4",
};

describe("two clients in one local platform environment", () => {
  let db: { url: string; drop(): Promise<void> };
  let pool: Pool;
  let emulator: Emulator;
  let dir: string;
  let acme: InstallationPlan;
  let globex: InstallationPlan;
  const bucket = () => path.join(dir, "bucket");
  const scripts = () => path.join(bucket(), BUCKET_FOLDERS.scripts);
  const connections = () => path.join(dir, "connections");
  const args = (plan: InstallationPlan) => [
    "run",
    "--definition",
    path.join(bucket(), plan.definitionKey),
    "--scripts",
    scripts(),
    "--connections",
    connections(),
  ];
  const tenantCredentials = () =>
    JSON.parse(fs.readFileSync(path.join(scripts(), "tenant_credentials.txt"), "utf8")) as Record<string, string>;
  const count = async (sql: string, params: unknown[] = []) => (await pool.query<{ n: number }>(sql, params)).rows[0].n;

  /** What `pulumi up` does for a stack, with the same operations. */
  async function provision(plan: InstallationPlan): Promise<void> {
    writeBucketObjects(bucket(), plan.bucketObjects);
    await applyScriptFiles({
      location: { kind: "folder", dir: scripts() },
      warehouseConnection: plan.scriptFiles.warehouseConnection,
      entries: JSON.parse(plan.scriptFiles.tenantCredentials.reveal()),
    });
    writeConnectionRecords(connections(), plan.connections);
    await applyBaseline(db.url, plan.baseline);
    await applyBaseline(db.url, plan.runTables);
    for (const row of [...plan.rows.apiConfig, ...plan.rows.platConfig])
      await upsertRow(db.url, { schema: plan.stagingSchema, ...row });
    for (const r of plan.routingRules)
      await postRoutingRules({
        cfgApiUrl: r.cfgApiUrl,
        tenantId: r.tenant.hubTenantId,
        credentialsString: r.credentialsString.reveal(),
        rules: r.rules,
      });
  }

  /** The SQL resources' state, as components/warehouse/sqlBaseline.ts records it. */
  const sqlState = (file: InstallationPlan["baseline"]): BaselineState => ({
    target: "test",
    name: file.name,
    buildNumber: file.buildNumber,
    templateSha256: file.sha256,
    sql: file.sql,
    tables: file.tables,
    sha256: sha256Hex(file.sql),
    version: BASELINE_PROVIDER_VERSION,
  });

  /** What `pulumi destroy` does for a stack: its own resources go; shared objects and the baseline's tables stay. */
  async function remove(plan: InstallationPlan): Promise<void> {
    // The common baseline and the client's run tables are retained on delete; their provider's delete drops nothing
    // either, were it called.
    for (const file of [plan.runTables, plan.baseline]) await baselineProvider.delete!("id", sqlState(file));
    for (const row of [...plan.rows.apiConfig, ...plan.rows.platConfig])
      await deleteRow(db.url, { schema: plan.stagingSchema, ...row });
    await releaseScriptFiles(
      { kind: "folder", dir: scripts() },
      Object.keys(JSON.parse(plan.scriptFiles.tenantCredentials.reveal())),
    );
    for (const o of plan.bucketObjects) if (!o.shared) fs.rmSync(path.join(bucket(), o.key), { force: true });
    // The database and storage records are the platform's (shared); the queue records are the stack's.
    for (const c of plan.connections)
      if (c.type === "MessageQueue")
        fs.rmSync(path.join(connections(), connectionFileName(c.systemName)), { force: true });
  }

  beforeAll(async () => {
    [db] = await Promise.all([createTestDatabase("two"), taskBundle()]);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-export-two-clients-"));
    emulator = await startEmulator({
      config: emulatorConfig({
        tenants: Object.fromEntries(
          [...Object.values(TENANTS), GLOBEX_TENANT].map((t) => [
            t.hubTenantId,
            { clientId: t.clientId, clientSecret: t.clientSecret },
          ]),
        ),
      }),
    });
    const acmeConfig = stackConfigFor(db.url, emulator.urls);
    const dbUrl = new URL(db.url);
    const database = dbUrl.pathname.slice(1);
    const password = decodeURIComponent(dbUrl.password);
    // A second client of the same platform environment: same database connection, its own queues, job and hub tenant.
    const globexConfig = validateStackConfig(
      {
        environment: "TEST",
        clientName: "GLOBEX",
        jobName: "HRSYS_EMPL_HUB_GLOBEX_202611_TEST",
        publishSchema: `${database}.publish`,
        stagingSchema: `${database}.staging`,
        bucket: { name: "acme-platform-test", create: false, connectionName: "PLAT_S3_TEST" },
        database: {
          connectionName: "PLAT_WAREHOUSE_TEST",
          host: dbUrl.hostname,
          port: Number(dbUrl.port),
          database,
          sslMode: "disable",
          admin: { username: decodeURIComponent(dbUrl.username), password },
          task: { username: decodeURIComponent(dbUrl.username), password },
        },
        connectionStore: { prefix: "globex/test" },
        hub: {
          default: {
            environmentName: "hub-test",
            apis: { ERS: emulator.urls.ers, CFG: emulator.urls.cfg, HRSYS: emulator.urls.hrsys },
          },
          allowLoopback: true,
        },
        queues: {
          EU: {
            connectionName: "HUB_MQ_EU_GLOBEX_TEST",
            baseUrl: emulator.urls.queues.EU,
            queueName: "globex-empl-eu",
            clientAccessId: QUEUES.EU.clientId,
            clientSecret: QUEUES.EU.clientSecret,
          },
        },
        hubTenants: [
          {
            hubTenantId: GLOBEX_TENANT.hubTenantId,
            hubTenantCode: "GLOBEX_EU_TEST",
            hubRegion: "EU",
            clientId: GLOBEX_TENANT.clientId,
            clientSecret: GLOBEX_TENANT.clientSecret,
          },
        ],
        platTenants: [{ platRegion: "APAC", codebase: "GBL", gblOrUs: "GBL", hubTenantCode: "GLOBEX_EU_TEST" }],
        schedule: { expression: "rate(1 day)" },
        network: { subnetIds: ["subnet-0test"], securityGroupIds: ["sg-0test"] },
      },
      { source: "globex", stack: "test" },
    );
    const sources = { template: loadPipelineTemplate(), ...loadSqlSources() };
    acme = planInstallation(acmeConfig, sources);
    globex = planInstallation(globexConfig, sources);
    pool = new Pool({ connectionString: db.url, max: 2 });
    await provision(acme);
    await provision(globex);
    await seedSampleEmployees(pool, {
      schema: acme.publishSchema,
      count: 240,
      seed: 5,
      platRegions: ["US", "EU", "APAC"],
    });
  });
  afterAll(async () => {
    await pool?.end();
    await emulator?.close();
    await db?.drop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("provisions both side by side: one template, one common schema, two rendered pipelines, each client's run tables, both clients' credential entries and rows", async () => {
    // The same common-schema SQL for both clients; each its own run tables.
    expect(globex.baseline).toEqual(acme.baseline);
    const { rows: tables } = await pool.query(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'staging' AND table_name LIKE 'hub\\_%\\_messages%' ORDER BY 1",
    );
    expect(tables.map((r) => r.table_name)).toEqual([
      "hub_acme_messages",
      "hub_acme_messages_archive",
      "hub_acme_messages_status",
      "hub_globex_messages",
      "hub_globex_messages_archive",
      "hub_globex_messages_status",
    ]);
    const template = loadPipelineTemplate();
    expect(
      fs
        .readFileSync(path.join(bucket(), BUCKET_FOLDERS.templates, template.fileName))
        .equals(fs.readFileSync(path.join(TEMPLATES_DIR, "hub_hrsys_export", template.fileName))),
    ).toBe(true);
    expect(JSON.parse(fs.readFileSync(path.join(bucket(), acme.definitionKey), "utf8")).parameters.client_name).toBe(
      "ACME",
    );
    expect(JSON.parse(fs.readFileSync(path.join(bucket(), globex.definitionKey), "utf8")).parameters.client_name).toBe(
      "GLOBEX",
    );
    expect(Object.keys(tenantCredentials()).sort()).toEqual(
      [TENANTS.US.hubTenantId, TENANTS.EU.hubTenantId, GLOBEX_TENANT.hubTenantId].sort(),
    );
    expect(fs.readFileSync(path.join(scripts(), "credentials.ini"), "utf8")).toBe(
      "[warehouse]\nwarehouse_connection = PLAT_WAREHOUSE_TEST\n",
    );
    const { rows } = await pool.query(
      "SELECT plat_client_name, plat_region FROM staging.hub_plat_config ORDER BY 1, 2",
    );
    expect(rows).toEqual([
      { plat_client_name: "ACME", plat_region: "EU" },
      { plat_client_name: "ACME", plat_region: "US" },
      { plat_client_name: "GLOBEX", plat_region: "APAC" },
    ]);
  });

  it("runs both clients to ExecutionCompleted, each into its own run tables", async () => {
    for (const plan of [acme, globex]) {
      const result = await runTask(args(plan));
      expect(result.stderr, plan.config.clientName).toBe("");
      expect(result.code, plan.config.clientName).toBe(0);
    }
    const inRegions = async (regions: string[]) =>
      count(`SELECT count(*)::int AS n FROM ${acme.publishSchema}.employee WHERE plat_region = ANY($1)`, [regions]);
    expect(await count("SELECT count(*)::int AS n FROM staging.hub_acme_messages_archive")).toBe(
      await inRegions(["US", "EU"]),
    );
    expect(await count("SELECT count(*)::int AS n FROM staging.hub_globex_messages_archive")).toBe(
      await inRegions(["APAC"]),
    );
    const { rows } = await pool.query(`SELECT job_name, status FROM ${completedRuns("staging")} ORDER BY job_name`);
    expect(rows).toEqual([
      { job_name: acme.config.jobName, status: "ExecutionCompleted" },
      { job_name: globex.config.jobName, status: "ExecutionCompleted" },
    ]);
    expect(emulator.state().queues.EU.destinations["globex-empl-eu"].count).toBe(await inRegions(["APAC"]));
  });

  it("removing one client leaves the other's rows, files, template, run tables and credential entries intact, and it still runs", async () => {
    const before = {
      acmeRows: await count("SELECT count(*)::int AS n FROM staging.hub_api_config WHERE hub_tenant_id = ANY($1)", [
        [TENANTS.US.hubTenantId, TENANTS.EU.hubTenantId],
      ]),
      acmePlat: await count("SELECT count(*)::int AS n FROM staging.hub_plat_config WHERE plat_client_name = 'ACME'"),
      acmeArchive: await count("SELECT count(*)::int AS n FROM staging.hub_acme_messages_archive"),
      acmeStatus: await count("SELECT count(*)::int AS n FROM staging.hub_acme_messages_status"),
      acmeIntakeJobs: await count("SELECT count(*)::int AS n FROM staging.hub_intake_job WHERE job_name = $1", [
        acme.config.jobName,
      ]),
      acmeEntries: Object.fromEntries(
        Object.entries(tenantCredentials()).filter(([id]) => id !== GLOBEX_TENANT.hubTenantId),
      ),
      acmeDefinition: fs.readFileSync(path.join(bucket(), acme.definitionKey), "utf8"),
    };
    await remove(globex);

    expect(
      await count("SELECT count(*)::int AS n FROM staging.hub_plat_config WHERE plat_client_name = 'GLOBEX'"),
    ).toBe(0);
    expect(
      await count("SELECT count(*)::int AS n FROM staging.hub_api_config WHERE hub_tenant_id = $1", [
        GLOBEX_TENANT.hubTenantId,
      ]),
    ).toBe(0);
    expect(fs.existsSync(path.join(bucket(), globex.definitionKey))).toBe(false);
    // The other client's part, untouched.
    expect(
      await count("SELECT count(*)::int AS n FROM staging.hub_api_config WHERE hub_tenant_id = ANY($1)", [
        [TENANTS.US.hubTenantId, TENANTS.EU.hubTenantId],
      ]),
    ).toBe(before.acmeRows);
    expect(await count("SELECT count(*)::int AS n FROM staging.hub_plat_config WHERE plat_client_name = 'ACME'")).toBe(
      before.acmePlat,
    );
    expect(await count("SELECT count(*)::int AS n FROM staging.hub_acme_messages_archive")).toBe(before.acmeArchive);
    expect(await count("SELECT count(*)::int AS n FROM staging.hub_acme_messages_status")).toBe(before.acmeStatus);
    expect(tenantCredentials()).toEqual(before.acmeEntries);
    expect(fs.readFileSync(path.join(bucket(), acme.definitionKey), "utf8")).toBe(before.acmeDefinition);
    const template = loadPipelineTemplate();
    expect(fs.existsSync(path.join(bucket(), BUCKET_FOLDERS.templates, template.fileName))).toBe(true);
    expect(fs.existsSync(path.join(scripts(), "credentials.ini"))).toBe(true);
    // The common tables, every client's run tables and the removed client's history stay (never dropped by a stack).
    for (const file of [acme.baseline, acme.runTables, globex.runTables])
      expect(await missingBaselineTables(db.url, file.sql), file.name).toEqual([]);
    expect(await count("SELECT count(*)::int AS n FROM staging.hub_globex_messages_archive")).toBeGreaterThan(0);
    expect(
      await count("SELECT count(*)::int AS n FROM staging.hub_intake_job WHERE job_name = $1", [acme.config.jobName]),
    ).toBe(before.acmeIntakeJobs);

    await pool.query(
      `UPDATE ${acme.publishSchema}.employee SET changed_at = localtimestamp WHERE employee_id IN (SELECT employee_id FROM ${acme.publishSchema}.employee WHERE plat_region = 'US' ORDER BY 1 LIMIT 5)`,
    );
    const again = await runTask(args(acme));
    expect(again.code).toBe(0);
    expect(await count("SELECT count(*)::int AS n FROM staging.hub_acme_messages_archive")).toBe(
      before.acmeArchive + 5,
    );
  });
});
