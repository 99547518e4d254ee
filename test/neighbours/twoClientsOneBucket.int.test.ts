/**
 * Two clients' stacks in one bucket (the platform environment's, adopted by both): each is planned by the real program
 * (its adopted bucket's guard looking at the loopback S3 for real) and applied. Every object of one client has a key
 * naming its job (the rendered pipeline, the hub checklist, the CLS load sheets), so the second stack is neither
 * refused by the guard nor overwrites the first; the shared parts (template, common schema, credential files, config
 * tables) hold both; each task reads its own CLS sheet and writes its own run tables; removing one stack leaves the
 * other's objects, rows, run tables and credential entries as they were, and the other still runs.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rawStackConfigFor, QUEUES, TENANTS } from "../../bench/platform";
import { runTask, type TaskResult } from "../support/taskProcess";
import {
  destroy,
  planStack,
  startPlatformServices,
  taskCommand,
  up,
  type PlatformServices,
  type StackState,
} from "../support/deploy";
import type { PlanRun } from "../../components/planner";
import { inputs, ofType, one } from "../fixtures/plan";
import { SAMPLE_LOADER_ROLE, seedSampleEmployees, touchEmployees } from "../../task/model/sampleData";
import { loadPipelineTemplate, TEMPLATES_DIR } from "../../templates";
import { BUCKET_FOLDERS } from "../../core/naming";
import { missingBaselineTables } from "../../providers/baseline";
import { completedRuns } from "../../operate/status";
import fs from "node:fs";
import path from "node:path";

const BUCKET = "acme-platform-test";
const GLOBEX_TENANT = {
  hubTenantId: "9c8b7a6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
  clientId: "globex-eu-test",
  clientSecret: "globex-eu-S3cr3t!z4",
};

describe("two clients' stacks in one bucket", () => {
  let platform: PlatformServices;
  const stacks = {} as Record<"acme" | "globex", { config: Record<string, any>; plan: PlanRun; state: StackState }>;
  const objects = () => platform.s3.buckets.get(BUCKET)!;
  const text = (key: string) => objects().get(key)?.body.toString("utf8");
  const tenantCredentials = (): Record<string, string> =>
    JSON.parse(text(`${BUCKET_FOLDERS.scripts}tenant_credentials.txt`)!);
  const definition = (client: "acme" | "globex") => `pipelines/hub_hrsys_export/${stacks[client].config.jobName}.Json`;
  const templateKey = `${BUCKET_FOLDERS.templates}${loadPipelineTemplate().fileName}`;
  /** The SQL of the stack's common schema or its client's run tables, as planned. */
  const sqlOf = (client: "acme" | "globex", type: "SqlBaseline" | "ClientRunTables"): string =>
    inputs(one(stacks[client].plan, `pulumi-nodejs:dynamic/hubExport:${type}`)).sql;
  const count = async (sql: string, params: unknown[] = []) =>
    (await platform.pool.query<{ n: number }>(sql, params)).rows[0].n;
  const inRegions = (regions: string[]) =>
    count("SELECT count(*)::int AS n FROM publish.employee WHERE plat_region = ANY($1)", [regions]);
  /** The stack's own objects (BucketObjectv2), by key. */
  const ownKeys = (plan: PlanRun): string[] =>
    ofType(plan, "aws:s3/bucketObjectv2:BucketObjectv2")
      .map((r) => inputs(r).key as string)
      .sort();

  async function run(client: "acme" | "globex"): Promise<TaskResult> {
    // The container's own command line; connection records from the folder standing in for Secrets Manager.
    const command = taskCommand(stacks[client].plan);
    const args = command.map((arg, i) => (command[i - 1] === "--connections" ? platform.connections : arg));
    return runTask(args, platform.env);
  }

  beforeAll(async () => {
    const tenants = Object.fromEntries(
      [...Object.values(TENANTS), GLOBEX_TENANT].map((t) => [
        t.hubTenantId,
        { clientId: t.clientId, clientSecret: t.clientSecret },
      ]),
    );
    platform = await startPlatformServices({ name: "onebucket", bucket: BUCKET, emulator: { tenants } });
    // The platform's scripts folder, with its templates (a platform release).
    for (const [key, body] of [
      [
        "Tools/hub_python_scripts/credentials_template.ini",
        "[warehouse]\nwarehouse_connection = <DATABASE_CONNECTION_NAME>\n",
      ],
      ["Tools/hub_python_scripts/tenant_credentials_template.txt", "{}"],
    ]) {
      objects().set(key, {
        body: Buffer.from(body),
        etag: `"${key}"`,
        contentType: "text/plain",
        lastModified: new Date(0),
      });
    }

    const { db, hub } = platform;
    const acme = { ...rawStackConfigFor(db.adminUrl, hub.urls), cls: { exports: "cls/samples" } };
    // A second client of the same platform environment: the same bucket and database connection, its own job, queue and hub tenant.
    const globex = {
      ...acme,
      clientName: "GLOBEX",
      jobName: "HRSYS_EMPL_HUB_GLOBEX_202611_TEST",
      connectionStore: { prefix: "globex/test" },
      queues: {
        EU: {
          connectionName: "HUB_MQ_EU_GLOBEX_TEST",
          baseUrl: hub.urls.queues.EU,
          queueName: "globex-empl-eu",
          clientAccessId: QUEUES.EU.clientId,
          clientSecret: QUEUES.EU.clientSecret,
        },
      },
      hubTenants: [{ hubTenantCode: "GLOBEX_EU_TEST", hubRegion: "EU", ...GLOBEX_TENANT }],
      platTenants: [{ platRegion: "APAC", codebase: "GBL", gblOrUs: "GBL", hubTenantCode: "GLOBEX_EU_TEST" }],
    };
    for (const [client, config] of [
      ["acme", acme],
      ["globex", globex],
    ] as const) {
      const plan = await planStack(config, `${client}-test`);
      stacks[client] = { config, plan, state: (await up(plan)).state };
      platform.writeConnections(config);
    }
    await seedSampleEmployees(platform.pool, {
      schema: "publish",
      loaderRole: SAMPLE_LOADER_ROLE,
      count: 90,
      seed: 3,
      platRegions: ["US", "EU", "APAC"],
    });
  });
  afterAll(async () => platform?.close());

  it("gives every object of a client a key naming its job: both applied, none shared, each tagged as its stack's", () => {
    const acme = ownKeys(stacks.acme.plan);
    const globex = ownKeys(stacks.globex.plan);
    for (const [keys, job] of [
      [acme, "HRSYS_EMPL_HUB_ACME_202611_TEST"],
      [globex, "HRSYS_EMPL_HUB_GLOBEX_202611_TEST"],
    ] as const) {
      expect(keys).toEqual([
        `hub-configuration/${job}/HUB_CHECKLIST.json`,
        `hub-configuration/${job}/HUB_CHECKLIST.md`,
        `hub-configuration/${job}/cls/CLS_LOAD_SHEET.csv`,
        `hub-configuration/${job}/cls/CLS_LOAD_SHEET.xlsx`,
        `pipelines/hub_hrsys_export/${job}.Json`,
      ]);
    }
    for (const key of acme) expect(objects().get(key)!.tags).toEqual({ "hub-export:stack": "hub-export/acme-test" });
    for (const key of globex)
      expect(objects().get(key)!.tags).toEqual({ "hub-export:stack": "hub-export/globex-test" });
    expect(
      objects().get("hub-configuration/HRSYS_EMPL_HUB_GLOBEX_202611_TEST/HUB_CHECKLIST.md")!.body.toString("utf8"),
    ).toContain("GLOBEX");
    expect(
      objects().get("hub-configuration/HRSYS_EMPL_HUB_ACME_202611_TEST/HUB_CHECKLIST.md")!.body.toString("utf8"),
    ).toContain("ACME");
  });

  it("shares one template, one common schema and the credential files; each client has its run tables, rows and entries", async () => {
    expect(sqlOf("globex", "SqlBaseline")).toBe(sqlOf("acme", "SqlBaseline"));
    const { rows: tables } = await platform.pool.query(
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
      objects()
        .get(templateKey)!
        .body.equals(fs.readFileSync(path.join(TEMPLATES_DIR, "hub_hrsys_export", template.fileName))),
    ).toBe(true);
    for (const client of ["acme", "globex"] as const)
      expect(JSON.parse(text(definition(client))!).parameters.client_name).toBe(stacks[client].config.clientName);
    expect(Object.keys(tenantCredentials()).sort()).toEqual(
      [TENANTS.US.hubTenantId, TENANTS.EU.hubTenantId, GLOBEX_TENANT.hubTenantId].sort(),
    );
    expect(text(`${BUCKET_FOLDERS.scripts}credentials.ini`)).toBe(
      "[warehouse]\nwarehouse_connection = PLAT_WAREHOUSE_TEST\n",
    );
    const { rows } = await platform.pool.query(
      "SELECT plat_client_name, plat_region FROM staging.hub_plat_config ORDER BY 1, 2",
    );
    expect(rows).toEqual([
      { plat_client_name: "ACME", plat_region: "EU" },
      { plat_client_name: "ACME", plat_region: "US" },
      { plat_client_name: "GLOBEX", plat_region: "APAC" },
    ]);
  });

  it("runs each client's task with its own command line: each reads its own job's CLS load sheet, writes its own run tables", async () => {
    for (const client of ["acme", "globex"] as const) {
      const result = await run(client);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr, client).toBe("");
      const sheet = `s3://${BUCKET}/hub-configuration/${stacks[client].config.jobName}/cls/CLS_LOAD_SHEET.csv`;
      expect(taskCommand(stacks[client].plan)).toEqual(expect.arrayContaining(["--cls", sheet]));
      const { rows } = await platform.pool.query(
        "SELECT detail -> 'unknownCodes' ->> 'sheet' AS sheet FROM staging.hub_export_run_history WHERE job_name = $1",
        [stacks[client].config.jobName],
      );
      expect(rows).toEqual([{ sheet }]);
    }
    expect(await count("SELECT count(*)::int AS n FROM staging.hub_acme_messages_archive")).toBe(
      await inRegions(["US", "EU"]),
    );
    expect(await count("SELECT count(*)::int AS n FROM staging.hub_globex_messages_archive")).toBe(
      await inRegions(["APAC"]),
    );
    const { rows } = await platform.pool.query(
      `SELECT job_name, status FROM ${completedRuns("staging")} ORDER BY job_name`,
    );
    expect(rows).toEqual([
      { job_name: stacks.acme.config.jobName, status: "ExecutionCompleted" },
      { job_name: stacks.globex.config.jobName, status: "ExecutionCompleted" },
    ]);
    expect(platform.hub.state().queues.EU.destinations["globex-empl-eu"].count).toBe(await inRegions(["APAC"]));
  });

  it("removing one stack leaves the other's objects byte-identical, its rows, run tables and entries as they were, and the other still runs", async () => {
    const acmeObjects = Object.fromEntries(ownKeys(stacks.acme.plan).map((key) => [key, objects().get(key)]));
    const acmeEntries = Object.fromEntries(
      Object.entries(
        JSON.parse(objects().get("Tools/hub_python_scripts/tenant_credentials.txt")!.body.toString("utf8")),
      ).filter(([id]) => id !== GLOBEX_TENANT.hubTenantId),
    );
    const acmeTenants = [TENANTS.US.hubTenantId, TENANTS.EU.hubTenantId];
    const counts = {
      api: "SELECT count(*)::int AS n FROM staging.hub_api_config WHERE hub_tenant_id = ANY($1)",
      plat: "SELECT count(*)::int AS n FROM staging.hub_plat_config WHERE plat_client_name = $1",
      intakeJobs: "SELECT count(*)::int AS n FROM staging.hub_intake_job WHERE job_name = $1",
      table: (t: string) => `SELECT count(*)::int AS n FROM staging.${t}`,
    };
    const before = {
      api: await count(counts.api, [acmeTenants]),
      plat: await count(counts.plat, ["ACME"]),
      archive: await count(counts.table("hub_acme_messages_archive")),
      status: await count(counts.table("hub_acme_messages_status")),
      intakeJobs: await count(counts.intakeJobs, [stacks.acme.config.jobName]),
    };
    await destroy(stacks.globex.state);

    expect(await count(counts.plat, ["GLOBEX"])).toBe(0);
    expect(await count(counts.api, [[GLOBEX_TENANT.hubTenantId]])).toBe(0);
    // An adopted bucket's objects are retained on delete (components/storage/platformBucket.ts): the platform's to remove.
    expect(objects().has(definition("globex"))).toBe(true);
    // The other client's part, untouched.
    expect({
      api: await count(counts.api, [acmeTenants]),
      plat: await count(counts.plat, ["ACME"]),
      archive: await count(counts.table("hub_acme_messages_archive")),
      status: await count(counts.table("hub_acme_messages_status")),
      intakeJobs: await count(counts.intakeJobs, [stacks.acme.config.jobName]),
    }).toEqual(before);
    expect(objects().has(templateKey)).toBe(true);
    expect(objects().has(`${BUCKET_FOLDERS.scripts}credentials.ini`)).toBe(true);
    // The common tables, every client's run tables and the removed client's history stay (never dropped by a stack).
    for (const sql of [
      sqlOf("acme", "SqlBaseline"),
      sqlOf("acme", "ClientRunTables"),
      sqlOf("globex", "ClientRunTables"),
    ])
      expect(await missingBaselineTables(platform.db.url, sql)).toEqual([]);
    expect(await count(counts.table("hub_globex_messages_archive"))).toBeGreaterThan(0);
    expect(Object.fromEntries(ownKeys(stacks.acme.plan).map((key) => [key, objects().get(key)]))).toEqual(acmeObjects);
    expect(JSON.parse(objects().get("Tools/hub_python_scripts/tenant_credentials.txt")!.body.toString("utf8"))).toEqual(
      acmeEntries,
    );
    const touched = await touchEmployees(platform.pool, { schema: "publish", count: 10, seed: 4 });
    const again = await run("acme");
    expect(again.code, again.stderr).toBe(0);
    const inScope = await count(
      "SELECT count(*)::int AS n FROM publish.employee WHERE employee_id = ANY($1) AND plat_region IN ('US', 'EU')",
      [touched],
    );
    expect(inScope).toBeGreaterThan(0);
    expect(await count(counts.table("hub_acme_messages_archive"))).toBe(before.archive + inScope);
  });
});
