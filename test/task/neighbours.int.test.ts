/**
 * The export task on a platform it shares with other hub pipelines: it writes HUB_INTAKE_JOB's specification columns
 * (and those of this project's earlier layout when a table has them), reads only its own tenants' entries of
 * tenant_credentials.txt and only its own key of credentials.ini, and checks the one-row-per-key rule of its config
 * rows itself (the shared tables have no key constraint).
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { employeesInScope, exportFixture, type ExportFixture } from "../support/exportFixture";
import { loadPipelineTemplate } from "../../templates";
import { runTask, taskBundle } from "../support/taskProcess";
import { TENANTS } from "../../bench/platform";
import { PLATFORM_ROLES } from "../../bench/platformRoles";
import { INTAKE_JOB_KNOWN_COLUMNS } from "../../core/intakeJob";

/** An entry in a format agreed with the service provider for another tenant: not a credentials string of ours. */
const FOREIGN_ENTRY = "c29tZVZlbmRvckZvcm1hdA==";
const FOREIGN_TENANT = "0f1e2d3c-4b5a-4968-8776-655443322110";

describe("export task: a good neighbour in shared tables and files", () => {
  let f: ExportFixture;
  const columns = async (table: string) =>
    (
      await f.pool.query<{ attname: string }>(
        "SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
        [table],
      )
    ).rows.map((r) => r.attname);

  beforeAll(async () => {
    [f] = await Promise.all([exportFixture({ employees: 40 }), taskBundle()]);
  });
  afterAll(async () => f?.close());

  it("writes the specification's job_name and transaction_id to HUB_INTAKE_JOB, other pipelines' rows untouched; the details go to its own history", async () => {
    await f.pool.query(
      `INSERT INTO ${f.t.intakeJob} (job_name, transaction_id) VALUES ('OTHER_PIPELINE_JOB', 'job-4711')`,
    );
    expect(await columns(f.t.intakeJob)).toEqual(["job_name", "transaction_id"]);
    const result = await runTask(f.platform.args);
    expect(result.code, result.stderr).toBe(0);
    const { rows } = await f.pool.query(`SELECT job_name, transaction_id FROM ${f.t.intakeJob} ORDER BY job_name`);
    const done = result.events.find((e) => e.event === "run.done")!;
    expect(rows).toEqual([
      { job_name: f.platform.config.jobName, transaction_id: done.transactionId },
      { job_name: "OTHER_PIPELINE_JOB", transaction_id: "job-4711" },
    ]);
    const { rows: details } = await f.pool.query(
      `SELECT status, extracted_count, published_count, finished_at FROM ${f.t.completedRuns} WHERE job_name = $1`,
      [f.platform.config.jobName],
    );
    const inScope = await employeesInScope(f.pool, f.platform.publishSchema);
    expect(details).toEqual([
      {
        status: "ExecutionCompleted",
        extracted_count: inScope,
        published_count: inScope,
        finished_at: expect.any(Date),
      },
    ]);
  });

  it("fills the columns of the earlier layout when HUB_INTAKE_JOB still has them", async () => {
    await f.pool.query(`ALTER TABLE ${f.t.intakeJob} RENAME TO hub_intake_job_spec_layout`);
    // Created by an earlier install of ours: the admin login's, as the run tables are.
    await f.pool
      .query(`SET ROLE ${PLATFORM_ROLES.admin.username}; CREATE TABLE ${f.t.intakeJob} (job_name text NOT NULL, transaction_id uuid NOT NULL PRIMARY KEY, plat_client_name text NOT NULL,
      status text NOT NULL CHECK (status = 'ExecutionCompleted'), build_number text NOT NULL, started_at timestamptz NOT NULL, finished_at timestamptz NOT NULL,
      extracted_count integer NOT NULL DEFAULT 0, message_count integer NOT NULL DEFAULT 0, published_count integer NOT NULL DEFAULT 0, failed_count integer NOT NULL DEFAULT 0,
      ers_entity_count integer NOT NULL DEFAULT 0, retried_count integer NOT NULL DEFAULT 0, held_back_count integer NOT NULL DEFAULT 0, error text NULL); RESET ROLE`);
    try {
      expect(await columns(f.t.intakeJob)).toEqual(["job_name", "transaction_id", ...INTAKE_JOB_KNOWN_COLUMNS]);
      await f.pool.query(
        `UPDATE ${f.platform.publishSchema}.employee SET changed_at = localtimestamp WHERE employee_id IN (SELECT employee_id FROM ${f.platform.publishSchema}.employee WHERE plat_region = 'US' ORDER BY 1 LIMIT 3)`,
      );
      const result = await runTask(f.platform.args);
      expect(result.code, result.stderr).toBe(0);
      const { rows } = await f.pool.query(
        `SELECT job_name, plat_client_name, status, build_number, extracted_count, published_count, failed_count, error, finished_at >= started_at AS ordered FROM ${f.t.intakeJob}`,
      );
      expect(rows).toEqual([
        {
          job_name: f.platform.config.jobName,
          plat_client_name: "ACME",
          status: "ExecutionCompleted",
          build_number: loadPipelineTemplate().buildNumber,
          extracted_count: 3,
          published_count: 3,
          failed_count: 0,
          error: null,
          ordered: true,
        },
      ]);
    } finally {
      await f.pool.query(
        `DROP TABLE ${f.t.intakeJob}; ALTER TABLE ${f.platform.stagingSchema}.hub_intake_job_spec_layout RENAME TO hub_intake_job`,
      );
    }
  });

  it("reads only its own tenants' entries of tenant_credentials.txt and its own key of credentials.ini; logs that others exist, never their values", async () => {
    const scripts = f.platform.scriptsDir;
    const txt = path.join(scripts, "tenant_credentials.txt");
    const ini = path.join(scripts, "credentials.ini");
    const saved = { txt: fs.readFileSync(txt, "utf8"), ini: fs.readFileSync(ini, "utf8") };
    try {
      fs.writeFileSync(
        txt,
        JSON.stringify(
          {
            ...JSON.parse(saved.txt),
            [FOREIGN_TENANT]: FOREIGN_ENTRY,
            "another-pipeline": { nested: ["not", "a", "string"] },
          },
          null,
          2,
        ),
      );
      fs.writeFileSync(
        ini,
        `; shared by the hub pipelines\n[other_pipeline]\napi_token = ${FOREIGN_ENTRY}\nmultiline = first\n  continued line\n${saved.ini}\n[extra]\nwarehouse_connection: NOT_OURS\n`,
      );
      const result = await runTask(f.platform.args);
      expect(result.code, result.stderr).toBe(0);
      expect(result.events.find((e) => e.event === "config.sharedEntries")).toMatchObject({ otherTenants: 2 });
      for (const text of [result.stdout, result.stderr]) expect(text).not.toContain(FOREIGN_ENTRY);
    } finally {
      fs.writeFileSync(txt, saved.txt);
      fs.writeFileSync(ini, saved.ini);
    }
  });

  it("still refuses its own tenant's entry that is not a credentials string, naming the tenant and not the value", async () => {
    const txt = path.join(f.platform.scriptsDir, "tenant_credentials.txt");
    const saved = fs.readFileSync(txt, "utf8");
    try {
      fs.writeFileSync(
        txt,
        JSON.stringify({ ...JSON.parse(saved), [TENANTS.EU.hubTenantId]: FOREIGN_ENTRY.slice(0, -2) }),
      );
      const result = await runTask(f.platform.args);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(
        new RegExp(
          `hub tenant ${TENANTS.EU.hubTenantId} \\(ACME_EU_TEST\\): its credentials string in tenant_credentials\\.txt: credentials string must end with the appended '=='`,
        ),
      );
      expect(result.stderr).not.toContain(FOREIGN_ENTRY.slice(0, -2));
    } finally {
      fs.writeFileSync(txt, saved);
    }
  });

  it("refuses its own config rows when a key has two (the shared tables have no key constraint)", async () => {
    const s = f.platform.stagingSchema;
    await f.pool.query(
      `INSERT INTO ${s}.hub_plat_config SELECT * FROM ${s}.hub_plat_config WHERE plat_client_name = 'ACME' AND plat_region = 'EU'`,
    );
    await f.pool.query(
      `INSERT INTO ${s}.hub_api_config (hub_api_name, hub_api_url, hub_environment_name, hub_region, hub_tenant_id) SELECT hub_api_name, 'https://hub-ext-other.example.com/ers/api/', hub_environment_name, hub_region, hub_tenant_id FROM ${s}.hub_api_config WHERE hub_tenant_id = $1 AND hub_api_name = 'ERS'`,
      [TENANTS.US.hubTenantId],
    );
    try {
      const result = await runTask(f.platform.args);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(
        `${s}.HUB_PLAT_CONFIG has 2 rows for client_name ACME and plat_region EU: delete all but one`,
      );
      expect(result.stderr).toContain(
        `${s}.HUB_API_CONFIG has 2 rows with different URLs for hub_tenant_id ${TENANTS.US.hubTenantId} and hub_api_name ERS: delete all but one`,
      );
    } finally {
      await f.pool.query(
        `DELETE FROM ${s}.hub_plat_config WHERE ctid IN (SELECT max(ctid) FROM ${s}.hub_plat_config WHERE plat_client_name = 'ACME' AND plat_region = 'EU')`,
      );
      await f.pool.query(
        `DELETE FROM ${s}.hub_api_config WHERE hub_api_url = 'https://hub-ext-other.example.com/ers/api/'`,
      );
    }
  });
});
