/**
 * The hub side without an API, under `pulumi up` (the real program under mocks): the CLS load sheets and the hub
 * checklist in the bucket's hub-configuration folder, the stack output, and `hub-export hub checklist`.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { configFromEngine } from "../../config/load";
import type { StackConfig } from "../../config/schema";
import { checklistMarkdown, hubChecklist } from "../../core/hubChecklist";
import { buildStackSheets } from "../../config/clsSheets";
import { loadSheetXlsx } from "../../cls/xlsx";
import type { PlanRun } from "../../components/planner";
import { editKey, fixtureStack, fixtureStackFile, type EngineConfigMap } from "../fixtures/stacks";
import { inputs, ofType, one, planOf } from "../fixtures/plan";
import { runMain } from "../support/cli";

const OBJECT = "aws:s3/bucketObjectv2:BucketObjectv2";
const objectsUnder = (run: PlanRun, prefix: string) =>
  Object.fromEntries(
    ofType(run, OBJECT)
      .map((r) => [inputs(r).key as string, r])
      .filter(([k]) => (k as string).startsWith(prefix)),
  );

describe("stack qa: CLS sheets from cls/samples", () => {
  let run: PlanRun;
  let config: StackConfig;
  let placeholders: string[];
  let built: Awaited<ReturnType<typeof buildStackSheets>>;
  beforeAll(async () => {
    const engine = fixtureStack("qa");
    placeholders = engine.placeholders;
    config = configFromEngine(engine.config, "qa");
    built = await buildStackSheets(config.cls!);
    // As `pulumi up` registers them: the offline plan has a stand-in for the sheets (checked below).
    run = await planOf(engine.config, "qa", { deployable: true });
  });

  it("uploads the CLS load sheets (CSV as text, XLSX as Base64) and the checklist into hub-configuration/, after the bucket", async () => {
    const objects = objectsUnder(run, "hub-configuration/");
    const component = one(run, "hubExport:hub:HubConfiguration");
    // Written like the bucket's other objects: after the bucket and its encryption, SSE-KMS with the stack's key.
    const bucket = one(run, "aws:s3/bucket:Bucket", "hub-export-bucket").urn;
    for (const o of Object.values<{ parent?: string; dependsOn: string[]; inputs: unknown }>(objects)) {
      expect(o.parent).toBe(component.urn);
      expect(o.dependsOn).toEqual(expect.arrayContaining([bucket]));
      expect(inputs(o as never)).toMatchObject({
        serverSideEncryption: "aws:kms",
        tags: { "hub-export:stack": "hub-export/qa" },
      });
    }
    const csv = inputs(objects["hub-configuration/HRSYS_EMPL_HUB_ACME_202611_QA/cls/CLS_LOAD_SHEET.csv"]);
    expect(csv).toMatchObject({
      bucket: "acme-platform-qa",
      contentType: "text/csv; charset=utf-8",
      content: built.csv,
    });
    const xlsx = inputs(objects["hub-configuration/HRSYS_EMPL_HUB_ACME_202611_QA/cls/CLS_LOAD_SHEET.xlsx"]);
    expect(Buffer.from(xlsx.contentBase64, "base64").equals(await loadSheetXlsx(built.sheet))).toBe(true);
    const checklist = hubChecklist(config, "qa", { rows: built.sheet.rows.length });
    expect(inputs(objects["hub-configuration/HRSYS_EMPL_HUB_ACME_202611_QA/HUB_CHECKLIST.md"]).content).toBe(
      checklistMarkdown(checklist),
    );
    expect(
      JSON.parse(inputs(objects["hub-configuration/HRSYS_EMPL_HUB_ACME_202611_QA/HUB_CHECKLIST.json"]).content),
    ).toEqual(checklist);
  });

  it("offline, the sheets are a stand-in that names the exports and changes with them (here their mapping)", async () => {
    const sheets = async (engine: EngineConfigMap) => {
      const objects = objectsUnder(await planOf(engine, "qa"), "hub-configuration/HRSYS_EMPL_HUB_ACME_202611_QA/cls/");
      const csv = inputs(objects["hub-configuration/HRSYS_EMPL_HUB_ACME_202611_QA/cls/CLS_LOAD_SHEET.csv"]).content;
      const xlsx = inputs(objects["hub-configuration/HRSYS_EMPL_HUB_ACME_202611_QA/cls/CLS_LOAD_SHEET.xlsx"]);
      expect(Buffer.from(xlsx.contentBase64, "base64").toString()).toBe(csv);
      return csv as string;
    };
    const samples = await sheets(fixtureStack("qa").config);
    expect(samples).toMatch(/^\(not built offline: the sheet of cls\/samples, exports sha256 [0-9a-f]{16}\)\n$/);
    const mapped = await sheets(
      editKey(fixtureStack("qa").config, "cls", (cls: object) => ({
        ...cls,
        businessObjects: { Gender: { code: "Code" } },
      })),
    );
    expect(mapped).not.toBe(samples);
  });

  it("exports the checklist and the sheets' locations as stack outputs, nothing secret", () => {
    const out = run.outputs as Record<string, any>;
    expect(out.clsLoadSheets).toEqual([
      "s3://acme-platform-qa/hub-configuration/HRSYS_EMPL_HUB_ACME_202611_QA/cls/CLS_LOAD_SHEET.csv",
      "s3://acme-platform-qa/hub-configuration/HRSYS_EMPL_HUB_ACME_202611_QA/cls/CLS_LOAD_SHEET.xlsx",
    ]);
    expect(out.hubChecklist.items.map((i: { id: string }) => i.id)).toEqual([
      "hub-version",
      ...config.hubTenants.map((t) => `tenant-${t.hubTenantCode}`),
      "cfg-wrapper-data",
      "cls-code-lists",
      "routing-rules",
      "service-provider-storage",
      "service-provider-credentials-format",
    ]);
    const text = JSON.stringify(out.hubChecklist);
    for (const p of placeholders) expect(text).not.toContain(p);
    for (const t of config.hubTenants) expect(text).not.toContain(t.clientId);
  });

  it("says per item what is automated and what a person must do", () => {
    const list = hubChecklist(config, "qa", { rows: 126 });
    const item = (id: string) => list.items.find((i) => i.id === id)!;
    for (const i of list.items) {
      expect(i.automated.length).toBeGreaterThan(0);
      expect(i.manual.length).toBeGreaterThan(0);
    }
    const envs = config.hubTenants
      .map((t) => `${config.hub.environments[t.hubRegion]!.environmentName} (${t.hubRegion})`)
      .join(", ");
    expect(item("hub-version").manual[0]).toBe(
      `Confirm that hub environments ${envs} run V9 or later: system code HRSYS exists only from V9 on.`,
    );
    const us = config.hubTenants[0];
    expect(item(`tenant-${us.hubTenantCode}`).title).toBe(
      `Hub tenant ${us.hubTenantCode} (${us.hubTenantId}, region US): EMPL with source HRSYS, targets HUBSYNC and HUBOPT`,
    );
    expect(item(`tenant-${us.hubTenantCode}`).automated[0]).toBe(
      `HUB_API_CONFIG rows (ERS, CFG, HRSYS) for hub environment ${config.hub.environments.US!.environmentName}; the HUB_PLAT_CONFIG rows of the platform tenants feeding it, hub destination HUB_MQ_US_QA.`,
    );
    expect(item("cfg-wrapper-data").title).toBe("cfg wrapper data for sysInt, CLS, ERS");
    expect(item("cls-code-lists").automated[0]).toBe(
      "Load sheet built from the HR system's exports in cls/samples (126 rows), uploaded to s3://acme-platform-qa/hub-configuration/HRSYS_EMPL_HUB_ACME_202611_QA/cls/CLS_LOAD_SHEET.csv and s3://acme-platform-qa/hub-configuration/HRSYS_EMPL_HUB_ACME_202611_QA/cls/CLS_LOAD_SHEET.xlsx.",
    );
    expect(item("cls-code-lists").automated[1]).toContain("unknown codes are reported and the run goes on");
    expect(item("routing-rules").automated).toEqual(
      config.hubTenants.map(
        (t) =>
          `Tenant ${t.hubTenantCode} (${t.hubTenantId}): 8 rules posted with POST routingRules to the CFG API of ${config.hub.environments[t.hubRegion]!.environmentName}; the specification's rule set.`,
      ),
    );
    // What is really in each folder: the tagged template in templates/, this job's rendered pipeline under its own key.
    const storage = item("service-provider-storage").automated[0];
    expect(storage).toContain(
      "templates/hub_hrsys_export/ (the tagged pipeline template HRSYS_Employee_HUB_Pipeline_Baseline_<BuildNumber>.Json, as procedure step 1 downloads it)",
    );
    expect(storage).toContain(
      "pipelines/hub_hrsys_export/HRSYS_EMPL_HUB_ACME_202611_QA.Json (this job's rendered pipeline, its tags replaced: what the task runs)",
    );
    expect(storage).not.toMatch(/templates\/hub_hrsys_export\/ \(the rendered/);
    expect(item("service-provider-credentials-format").automated[0]).toContain(
      "{'clientId': '<id>', 'clientSecret': '<secret>'}, Base64-encoded with == appended",
    );
    expect(checklistMarkdown(list)).toContain(`## 2. Hub tenant ${us.hubTenantCode}`);
    expect(checklistMarkdown(list).match(/^- \[ \] /gm)!.length).toBe(
      list.items.reduce((n, i) => n + i.manual.length, 0),
    );
  });

  it("hub-export hub checklist prints the same list as JSON and as Markdown", async () => {
    const json = await runMain(["hub", "checklist", "--file", fixtureStackFile("qa"), "--json"]);
    expect(json.stderr).toBe("");
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(hubChecklist(config, "qa", { rows: 126 }));
    const md = await runMain(["hub", "checklist", "--file", fixtureStackFile("prod")]);
    expect(md.code).toBe(0);
    expect(md.stdout).toContain("# Hub checklist: ACME PROD (stack prod");
    const usage = await runMain(["hub", "list"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("unknown command 'list'");
  });
});

describe("stack without cls (prod) and with strict mode", () => {
  it("prod: only the checklist is uploaded, its CLS item says what a person must do, the task runs without the check", async () => {
    const engine = fixtureStack("prod");
    const run = await planOf(engine.config, "prod");
    expect(Object.keys(objectsUnder(run, "hub-configuration/")).sort()).toEqual([
      "hub-configuration/HRSYS_EMPL_HUB_ACME_202611_PROD/HUB_CHECKLIST.json",
      "hub-configuration/HRSYS_EMPL_HUB_ACME_202611_PROD/HUB_CHECKLIST.md",
    ]);
    const cls = (run.outputs as Record<string, any>).hubChecklist.items.find(
      (i: { id: string }) => i.id === "cls-code-lists",
    );
    expect(cls.automated[0]).toContain("no hubExport:cls config");
    expect((run.outputs as Record<string, any>).clsLoadSheets).toEqual([]);
    const [container] = JSON.parse(inputs(one(run, "aws:ecs/taskDefinition:TaskDefinition")).containerDefinitions);
    expect(container.command).not.toContain("--cls");
  });

  it("strict: the task's command asks for strict mode", async () => {
    const engine = fixtureStack("qa");
    const run = await planOf(
      editKey(engine.config, "cls", (c: object) => ({ ...c, strict: true })),
      "qa",
    );
    const [container] = JSON.parse(inputs(one(run, "aws:ecs/taskDefinition:TaskDefinition")).containerDefinitions);
    expect(container.command.slice(-4)).toEqual([
      "--cls",
      "s3://acme-platform-qa/hub-configuration/HRSYS_EMPL_HUB_ACME_202611_QA/cls/CLS_LOAD_SHEET.csv",
      "--cls-mode",
      "strict",
    ]);
  });

  it("a stack whose exports cannot be read fails the program with the build's lines", async () => {
    const engine = fixtureStack("qa");
    await expect(
      planOf(
        editKey(engine.config, "cls", (c: object) => ({ ...c, exports: "no/such/folder" })),
        "qa",
      ),
    ).rejects.toThrow(/no\/such\/folder: cannot read the folder of exports \(ENOENT\)/);
  });
});
