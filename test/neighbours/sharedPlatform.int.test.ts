/**
 * A shared platform: another client's rows in the specification's three tables (which have exactly the
 * specification's columns, created by the platform), another pipeline's HUB_INTAKE_JOB rows, the other client's files
 * in the bucket, the vendor's templates and scripts in the scripts folder, a tenant entry in a format this project does
 * not know in tenant_credentials.txt and a vendor key in credentials.ini. This stack is installed (the real program
 * under mocks, its providers called for real against embedded PostgreSQL and the loopback S3, through the engine's
 * steps), runs the bundled task, changes its KMS key, renames its database connection and is removed, the engine
 * deleting with the OLD state. At the end everything of the other client and the vendor is byte-identical, and every
 * run of this stack completed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rawStackConfigFor, JOB_NAME, TENANTS } from "../../bench/platform";
import { PLATFORM_ROLES } from "../../bench/platformRoles";
import { runTask, type TaskResult } from "../support/taskProcess";
import {
  destroy,
  planStack,
  startPlatformServices,
  up,
  type PlatformServices,
  type StackState,
  type UpReport,
} from "../support/deploy";
import type { S3Object } from "../support/s3";
import { SAMPLE_LOADER_ROLE, seedSampleEmployees, touchEmployees } from "../../task/model/sampleData";

const BUCKET = "acme-platform-test";
const SCRIPTS = "Tools/hub_python_scripts/";
const VENDOR_KMS = "arn:aws:kms:us-east-1:123456789012:key/0a0a0a0a-platform-vendor";
const NEW_KMS = "arn:aws:kms:us-east-1:123456789012:key/5b5b5b5b-1111-4222-8333-944444444444";
const GLOBEX = {
  client: "GLOBEX",
  job: "HRSYS_EMPL_HUB_GLOBEX_202611_TEST",
  tenant: "9c8b7a6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
};
/** The other client's entry, in a format agreed with the service provider that this project does not know. */
const FOREIGN_ENTRY = "c29tZVZlbmRvckZvcm1hdA==";
const VENDOR_INI_TEMPLATE =
  "; hub_python_scripts 7.3 (platform release)\r\n[warehouse]\r\nwarehouse_connection = <DATABASE CONNECTION>\r\n";
const VENDOR_TXT_TEMPLATE = '{"<tenant>": "<credentials>", "_comment": "platform release 7.3"}';
const CREDENTIALS_INI =
  "; shared by the platform's hub pipelines\n[warehouse]\nwarehouse_connection = PLAT_WAREHOUSE_TEST\n\n[vendor]\napi_key = c29tZVZlbmRvckZvcm1hdA==\nendpoint: https://vendor.example.com/v2\n";

describe("a good neighbour on a shared platform: install, run, change the KMS key, rename the connection, remove", () => {
  let platform: PlatformServices;
  let raw: Record<string, any>;
  let state: StackState;
  const runs: TaskResult[] = [];
  const query = (sql: string, params: unknown[] = []) => platform.pool.query(sql, params);
  const objects = () => platform.s3.buckets.get(BUCKET)!;
  const text = (key: string) => objects().get(key)?.body.toString("utf8");
  const put = (key: string, body: string, extra: Partial<S3Object> = {}) =>
    objects().set(key, {
      body: Buffer.from(body),
      etag: `"${key.length}-${body.length}"`,
      contentType: "text/plain",
      lastModified: new Date(Date.UTC(2026, 0, 1)),
      sse: "aws:kms",
      kmsKeyId: VENDOR_KMS,
      ...extra,
    });

  /** The neighbours' objects: everything in the bucket now, before this stack's first `up`. */
  let neighbourKeys: string[];

  /** Everything of the other client and the vendor, as bytes and metadata. */
  async function neighbours() {
    const rows = async (sql: string) => (await query(sql)).rows.map((x: { r: string }) => x.r);
    const files = Object.fromEntries(
      neighbourKeys
        .filter((k) => !k.endsWith("credentials.txt") && !k.endsWith("credentials.ini"))
        .map((k) => [k, objects().get(k)]),
    );
    const ini = text(`${SCRIPTS}credentials.ini`)!;
    return {
      apiConfig: await rows(
        `SELECT t::text AS r FROM staging.hub_api_config t WHERE hub_tenant_id = '${GLOBEX.tenant}' ORDER BY 1`,
      ),
      platConfig: await rows(
        "SELECT t::text AS r FROM staging.hub_plat_config t WHERE plat_client_name = 'GLOBEX' ORDER BY 1",
      ),
      intakeJob: await rows(
        `SELECT t::text AS r FROM staging.hub_intake_job t WHERE job_name <> '${JOB_NAME}' ORDER BY 1`,
      ),
      files,
      // The shared files: the other tenant's entry as it was, and every line of credentials.ini but the connection's.
      foreignEntry: JSON.parse(text(`${SCRIPTS}tenant_credentials.txt`)!)[GLOBEX.tenant],
      otherIniLines: ini.split("\n").filter((l) => !l.startsWith("warehouse_connection")),
    };
  }

  /** `pulumi up` with this config, and what the platform's connection-strings collection gets (Secrets Manager here is a folder). */
  async function deploy(config: Record<string, any>): Promise<UpReport> {
    const result = await up(await planStack(config, "test"), state);
    state = result.state;
    platform.writeConnections(config);
    return result.report;
  }

  /** The export task's bundle, run as the container runs it: definition and scripts from the bucket. */
  async function run(): Promise<TaskResult> {
    const result = await runTask(
      [
        "run",
        "--definition",
        `s3://${BUCKET}/pipelines/hub_hrsys_export/${JOB_NAME}.Json`,
        "--scripts",
        `s3://${BUCKET}/${SCRIPTS}`,
        "--connections",
        platform.connections,
      ],
      platform.env,
    );
    runs.push(result);
    return result;
  }

  let before: Awaited<ReturnType<typeof neighbours>>;

  beforeAll(async () => {
    platform = await startPlatformServices({ name: "neighbours", bucket: BUCKET });
    raw = rawStackConfigFor(platform.db.adminUrl, platform.hub.urls);

    // The platform's common tables, with exactly the specification's columns, and the other client's rows: installed
    // by another pipeline with the same admin login (RDS's master user).
    await query(`SET ROLE ${PLATFORM_ROLES.admin.username}; CREATE SCHEMA staging;
      CREATE TABLE staging.hub_api_config (hub_api_name varchar(16), hub_api_url varchar(400), hub_environment_name varchar(64), hub_region varchar(8), hub_tenant_id varchar(36));
      CREATE TABLE staging.hub_plat_config (plat_region varchar(8), plat_client_name varchar(64), codebase varchar(16), gbl_or_us varchar(8), secure_view_source varchar(64), connector_id varchar(64), hub_destination varchar(128), hub_tenant_code varchar(64), hub_tenant_id varchar(36));
      CREATE TABLE staging.hub_intake_job (job_name varchar(128), transaction_id varchar(64));
      INSERT INTO staging.hub_api_config VALUES ('ERS', 'https://hub-ext-globex.example.com/ers/api/', 'hub-globex', 'EU', '${GLOBEX.tenant}'),
        ('HRSYS', 'https://hub-ext-globex.example.com/hrsys/api/', 'hub-globex', 'EU', '${GLOBEX.tenant}'), ('REPORTING', 'https://reports.example.com/', 'hub-globex', 'LATAM', '${GLOBEX.tenant}');
      INSERT INTO staging.hub_plat_config VALUES ('US', 'GLOBEX', 'US', 'US', NULL, NULL, 'HUB_MQ_EU_GLOBEX', 'GLOBEX_EU', '${GLOBEX.tenant}');
      INSERT INTO staging.hub_intake_job VALUES ('${GLOBEX.job}', 'a1b2c3'), ('OTHER_PIPELINE_PAYROLL_DAILY', '2026-11-20#17'); RESET ROLE`);
    // The vendor's scripts and templates, the other client's files, the shared files with their entries.
    put(SCRIPTS, "", { contentType: "application/x-directory" });
    put(`${SCRIPTS}hub_export.py`, "print('vendor release 7.3')\n");
    put(`${SCRIPTS}credentials_template.ini`, VENDOR_INI_TEMPLATE);
    put(`${SCRIPTS}tenant_credentials_template.txt`, VENDOR_TXT_TEMPLATE, { contentType: "application/json" });
    put(`${SCRIPTS}credentials.ini`, CREDENTIALS_INI);
    put(`${SCRIPTS}tenant_credentials.txt`, JSON.stringify({ [GLOBEX.tenant]: FOREIGN_ENTRY }, null, 2), {
      contentType: "application/json",
    });
    put("templates/hub_hrsys_export/", "", { contentType: "application/x-directory" });
    put(`pipelines/hub_hrsys_export/${GLOBEX.job}.Json`, '{"parameters": {"client_name": "GLOBEX"}}', {
      tags: { "hub-export:stack": "hub-export/globex-test" },
    });
    put(`hub-configuration/${GLOBEX.job}/HUB_CHECKLIST.md`, "# Hub checklist: GLOBEX\n", {
      tags: { "hub-export:stack": "hub-export/globex-test" },
    });
    put(`hub-configuration/${GLOBEX.job}/cls/CLS_LOAD_SHEET.csv`, "SYSTEM,CLS_ENTITY_NAME\n", {
      tags: { "hub-export:stack": "hub-export/globex-test" },
    });
    neighbourKeys = [...objects().keys()];
    before = await neighbours();
  });
  afterAll(async () => platform?.close());

  /** A run of ours: completed, its HUB_INTAKE_JOB row written, only this client's entries read. */
  async function expectCompleted(result: TaskResult): Promise<void> {
    expect(result.code, result.stderr).toBe(0);
    const done = result.events.find((e) => e.event === "run.done");
    expect(done).toMatchObject({ status: "ExecutionCompleted" });
    expect(result.events.find((e) => e.event === "config.sharedEntries")).toMatchObject({ otherTenants: 1 });
    expect(result.stdout + result.stderr).not.toContain(FOREIGN_ENTRY);
    const { rows } = await query("SELECT job_name FROM staging.hub_intake_job WHERE transaction_id = $1", [
      done!.transactionId,
    ]);
    expect(rows).toEqual([{ job_name: JOB_NAME }]);
  }

  it("installs next to them: adopts the tables as they are, creates nothing shared that exists, adds only its own", async () => {
    const report = await deploy(raw);
    expect(Object.values(report).every((step) => step === "create")).toBe(true);
    // The tables keep exactly the specification's columns.
    const { rows: columns } = await query(
      "SELECT table_name, count(*)::int AS n FROM information_schema.columns WHERE table_schema = 'staging' AND table_name IN ('hub_api_config', 'hub_plat_config', 'hub_intake_job') GROUP BY 1 ORDER BY 1",
    );
    expect(columns).toEqual([
      { table_name: "hub_api_config", n: 5 },
      { table_name: "hub_intake_job", n: 2 },
      { table_name: "hub_plat_config", n: 9 },
    ]);
    const { rows: ours } = await query(
      "SELECT plat_client_name, plat_region FROM staging.hub_plat_config ORDER BY 1, 2",
    );
    expect(ours).toEqual([
      { plat_client_name: "ACME", plat_region: "EU" },
      { plat_client_name: "ACME", plat_region: "US" },
      { plat_client_name: "GLOBEX", plat_region: "US" },
    ]);
    // The vendor's templates were there: the credential files had their entries merged in, nothing more.
    expect(JSON.parse(text(`${SCRIPTS}tenant_credentials.txt`)!)).toEqual({
      [GLOBEX.tenant]: FOREIGN_ENTRY,
      [TENANTS.US.hubTenantId]: expect.any(String),
      [TENANTS.EU.hubTenantId]: expect.any(String),
    });
    expect(await neighbours()).toEqual(before);
    await seedSampleEmployees(platform.pool, {
      schema: "publish",
      loaderRole: SAMPLE_LOADER_ROLE,
      count: 60,
      seed: 7,
      platRegions: ["US", "EU", "APAC"],
    });
  });

  it("runs the bundled task to ExecutionCompleted, reading only its own entries", async () => {
    await expectCompleted(await run());
  });

  it("changes its KMS key: updates in place, never leaving the shared files without its entries, and runs again", async () => {
    raw = { ...raw, bucket: { ...raw.bucket, kmsKeyArn: NEW_KMS } };
    const report = await deploy(raw);
    const steps = (kind: string) =>
      Object.entries(report)
        .filter(([key]) => key.includes(kind))
        .map(([, step]) => step);
    expect(steps("ScriptFileEntries")).toEqual(["update"]);
    expect(new Set(steps("SharedObject"))).toEqual(new Set(["update"]));
    // tenant_credentials.txt got this stack's entries under its old key: written again under the new one.
    // credentials.ini already named this stack's connection: never written by it, it keeps the platform's key.
    expect(objects().get(`${SCRIPTS}tenant_credentials.txt`)!.kmsKeyId).toBe(NEW_KMS);
    expect(objects().get(`${SCRIPTS}credentials.ini`)!.kmsKeyId).toBe(VENDOR_KMS);
    expect(objects().get(`pipelines/hub_hrsys_export/${JOB_NAME}.Json`)!.kmsKeyId).toBe(NEW_KMS);
    expect(await neighbours()).toEqual(before);
    await touchEmployees(platform.pool, { schema: "publish", count: 10, seed: 8 });
    await expectCompleted(await run());
  });

  it("renames its database connection: its own value in credentials.ini is replaced, the rest kept, and it runs again", async () => {
    raw = { ...raw, database: { ...raw.database, connectionName: "PLAT_WAREHOUSE_TEST_V2" } };
    const report = await deploy(raw);
    expect(
      Object.entries(report)
        .filter(([key]) => key.includes("ScriptFileEntries"))
        .map(([, step]) => step),
    ).toEqual(["update"]);
    expect(text(`${SCRIPTS}credentials.ini`)).toBe(
      CREDENTIALS_INI.replace(
        "warehouse_connection = PLAT_WAREHOUSE_TEST",
        "warehouse_connection = PLAT_WAREHOUSE_TEST_V2",
      ),
    );
    expect(await neighbours()).toEqual(before);
    await touchEmployees(platform.pool, { schema: "publish", count: 10, seed: 9 });
    await expectCompleted(await run());
  });

  it("is removed (deleted with the old state): only its own part goes, and everything of the other client and the vendor is byte-identical", async () => {
    await destroy(state);
    expect(JSON.parse(text(`${SCRIPTS}tenant_credentials.txt`)!)).toEqual({ [GLOBEX.tenant]: FOREIGN_ENTRY });
    const { rows } = await query(
      "SELECT plat_client_name FROM staging.hub_plat_config UNION ALL SELECT hub_tenant_id FROM staging.hub_api_config WHERE hub_tenant_id <> $1",
      [GLOBEX.tenant],
    );
    expect(rows).toEqual([{ plat_client_name: "GLOBEX" }]);
    expect(await neighbours()).toEqual(before);
    // No request ever wrote or deleted a neighbour's object (the shared files are merged into, by design): the
    // shared objects' conditional writes (If-None-Match: *) were all refused.
    const touched = platform.s3.requests.filter(
      (r) =>
        (r.method === "PUT" || r.method === "DELETE") &&
        neighbourKeys.includes(r.key) &&
        !/credentials\.(ini|txt)$/.test(r.key),
    );
    expect(touched.length).toBeGreaterThan(0);
    expect(touched.filter((r) => r.status !== 412)).toEqual([]);
    // Every run of this stack completed, and stays found by its job name.
    expect(runs.map((r) => r.events.find((e) => e.event === "run.done")?.status)).toEqual([
      "ExecutionCompleted",
      "ExecutionCompleted",
      "ExecutionCompleted",
    ]);
    expect(
      (await query("SELECT count(*)::int AS n FROM staging.hub_intake_job WHERE job_name = $1", [JOB_NAME])).rows,
    ).toEqual([{ n: 3 }]);
  });
});
